// The benchmark's Go contenders: dlock's Go client from this checkout (the replace below) and
// redsync's algorithm on redigo; dependencies from the Go module proxy (bench/run.sh builds it).
module dlock.dev/benchharness

go 1.26.0

require (
	dlock.dev/dlock v0.0.0
	github.com/gomodule/redigo v1.9.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/mna/redisc v1.4.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace dlock.dev/dlock => ../../../go
