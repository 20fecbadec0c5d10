#!/usr/bin/env bash
# `make bench-multi`: installs the peers it measures when missing (node-redlock via npm into
# bench/harness, redsync's algorithm in the Go harness built into target/go/bench-go, Redisson's
# MultiLock in the Java harness, bench/java, as bench/run.sh does), then runs the dining philosophers (docs/bench/multi.md). A peer whose
# registry or toolchain is missing is skipped with a notice. BENCH_MULTI_SECS (default 60) is
# each run's length; BENCH_MULTI_ONLY=word,... keeps the rows whose label contains a word.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/harness/node_modules/redlock" ] && command -v npm >/dev/null 2>&1; then
  (cd "$here/harness" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1) \
    || echo "bench-multi: npm install of node-redlock failed (registry unreachable?): skipped" >&2
fi
if command -v go >/dev/null 2>&1; then
  (cd "$here/harness/go" && GOTOOLCHAIN=auto go build -o "$here/../target/go/bench-go" .) \
    || echo "bench-multi: building bench/harness/go failed (Go module proxy unreachable?): redsync skipped" >&2
fi
bash "$here/java/build.sh" || echo "bench-multi: Redisson skipped" >&2
cd "$here/.." || exit 1
exec cargo run --release -q -p dlock-bench --bin bench-multi
