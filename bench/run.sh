#!/usr/bin/env bash
# `make bench` / `make bench-quick`: installs the external contenders (node-redlock via npm,
# pottery and python-redis-lock via pip, dlock's Python client from ./python, dlock's Node client
# built in ./node, dlock's Go client and redsync's algorithm built from bench/harness/go, dlock's
# Java client and Redisson through Maven in bench/java) into bench/, then runs the benchmark
# driver. A contender whose registry is unreachable is skipped with a notice, never silently.
# `--java` (make bench-java): only the Java harness is built and measured beside the Rust rows.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# dlock's Java client (java/, installed into ~/.m2) and Redisson 3.52.0, in the Java harness
# (bench/java; offline after the first resolve): "dlock (java)" and the Redisson rows.
bash "$here/java/build.sh"
if [ "${1:-}" = "--java" ]; then
  cd "$here/.." || exit 1
  exec cargo run --release -q -p dlock-bench --bin bench -- --java
fi
if command -v npm >/dev/null 2>&1; then
  (cd "$here/harness" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1) \
    || echo "bench: npm install of node-redlock failed (registry unreachable?): node-redlock skipped" >&2
else
  echo "bench: npm not found: node-redlock skipped" >&2
fi
if command -v npm >/dev/null 2>&1; then
  # dlock's Node client, built from this checkout (node/dist): the "dlock (node)" contender.
  (cd "$here/../node" && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent >/dev/null 2>&1; } && npm run --silent build >/dev/null 2>&1) \
    || echo "bench: building node/ failed (npm unreachable?): dlock (node) skipped" >&2
fi
# dlock's Go client and redsync's algorithm (bench/harness/go, dlock from this checkout), built
# with the Go module proxy's modules (make go-deps): the "dlock (go)" and "redsync" contenders.
if command -v go >/dev/null 2>&1; then
  (cd "$here/harness/go" && GOTOOLCHAIN=auto go build -o "$here/../target/go/bench-go" .) \
    || echo "bench: building bench/harness/go failed (Go module proxy unreachable?): dlock (go) and redsync skipped" >&2
else
  echo "bench: Go not installed (make go-deps): dlock (go) and redsync skipped" >&2
fi
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv" >/dev/null 2>&1 || echo "bench: python3 -m venv failed: pottery and python-redis-lock skipped" >&2
fi
if [ -x "$here/.venv/bin/pip" ]; then
  "$here/.venv/bin/pip" install -q -r "$here/harness/requirements.txt" >/dev/null 2>&1 \
    || { echo "bench: pip install of pottery/python-redis-lock failed (PyPI unreachable?): both skipped" >&2; rm -rf "$here/.venv"; }
fi
if [ -x "$here/.venv/bin/pip" ]; then
  # dlock's own Python client, from this checkout (reinstalled each run: it follows the source).
  "$here/.venv/bin/pip" install -q --force-reinstall --no-deps "$here/../python" >/dev/null 2>&1 \
    || echo "bench: pip install of ./python failed: dlock (python) skipped" >&2
  rm -rf "$here/../python/build"
fi
cd "$here/.." || exit 1
cargo run --release -q -p dlock-bench --bin bench -- "$@"
status=$?
# Shared locks and semaphores on the server, then capacity per core and handoffs at the physical
# limit (docs/bench/shared.md, capacity.md, handoff-limit.md): full runs only.
if [ "${1:-}" != "--quick" ]; then
  cargo run --release -q -p dlock-bench --bin bench-shared || status=1
  cargo run --release -q -p dlock-bench --bin bench-capacity || status=1
  cargo run --release -q -p dlock-bench --bin bench-handoff-limit || status=1
fi
exit $status
