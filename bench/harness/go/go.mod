// Built only in the workspace scripts/go-offline.sh writes, which provides dlock.dev/dlock
// (the module in go/) and Debian's redigo.
module dlock.dev/benchharness

go 1.19

require github.com/gomodule/redigo v1.8.3
