#!/usr/bin/env bash
# `make test` (what CI runs): every suite, each run to its end even when an earlier one failed, then
# one line per suite and, last, the totals across Rust, Python, Node, Go, Java and the signal check as
# "total: N passed, M failed", so a CI log's last line says how it went. Exits non-zero if anything
# failed. Expects `make build` to have run.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d -t dlock-test.XXXXXX)
passed=0
failed=0
lines=()

# Sums "N passed" / "N failed" (and pytest's "N error") over the summary lines of a suite's log:
# cargo's "test result: ..." and pytest's "... in 12.34s".
count() {
  local log=$1 kind=$2
  grep -E '^test result:| in [0-9.]+s' "$log" | grep -oE "[0-9]+ $kind" | awk '{s += $1} END {print s + 0}'
}

# Runs one suite, its output shown and kept; $1 names it, $2 says whether it reports test counts.
suite() {
  local name=$1 counted=$2 status p f started=$SECONDS took
  shift 2
  echo "== $name" >&2
  "$@" 2>&1 | tee "$logs/$name.log"
  status=${PIPESTATUS[0]}
  took="$((SECONDS - started)) s"
  if [ "$counted" = counted ]; then
    p=$(count "$logs/$name.log" passed)
    f=$(($(count "$logs/$name.log" failed) + $(count "$logs/$name.log" error)))
    # A suite that failed without a count (a build or lint error) still counts as a failure.
    [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p))
    failed=$((failed + f))
    lines+=("$name: $p passed, $f failed ($took)")
  elif [ "$status" -eq 0 ]; then
    lines+=("$name: ok ($took)")
  else
    failed=$((failed + 1))
    lines+=("$name: FAILED (exit $status, $took)")
  fi
}

# The tests that send signals, started the way a background job of a non-interactive shell (or
# nohup, or a CI runner) starts them: SIGINT and SIGTERM ignored, no terminal, no standard input.
# Each such test sets the dispositions it relies on itself; this proves it. elect.rs sets none:
# it proves that dlock acts on SIGTERM even when started with it ignored (issue 48).
signals() {
  (
    trap '' INT TERM
    python3 -c 'import signal, sys; sys.exit(any(signal.getsignal(s) != signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM)))' ||
      { echo "signals: SIGINT and SIGTERM are not ignored in the check's environment" >&2; exit 1; }
    setsid -w cargo test --release -q --test cli_signals --test supervisor --test elect </dev/null || exit 1
    cd python && setsid -w .venv/bin/python -m pytest -q -p timeout --timeout 120 \
      tests/test_faults.py -k ctrl_c </dev/null
  )
}

# The Node client's tests (make node-test), their TAP totals ("# pass N", "# fail N") said the
# way count() reads them. Skipped, with a notice, only when Node cannot be had (make node-deps
# installs it from Debian where it can).
node_suite() {
  local started=$SECONDS status
  make --no-print-directory node-test 2>&1 | tee "$logs/node.tap"
  status=${PIPESTATUS[0]}
  tap() { grep -E "^# $1 [0-9]+$" "$logs/node.tap" | awk '{s += $3} END {print s + 0}'; }
  echo "node: $(tap pass) passed, $(tap fail) failed in $((SECONDS - started)).0s"
  return "$status"
}

# The Go client's tests (make go-test), their top-level results ("--- PASS: Test..." and "---
# FAIL: Test..." of go test -v) said the way count() reads them. Skipped, with a notice, only
# when Go cannot be had (make go-deps installs Debian's when there is none; the modules and, for
# an older go, the toolchain come from the Go module proxy, and an unreachable proxy fails it).
go_suite() {
  local started=$SECONDS status
  make --no-print-directory go-test 2>&1 | tee "$logs/go.out"
  status=${PIPESTATUS[0]}
  results() { grep -cE "^--- $1: " "$logs/go.out"; }
  echo "go: $(results PASS) passed, $(results FAIL) failed in $((SECONDS - started)).0s"
  return "$status"
}

# The Java client's tests (make java-test: the suite on Java 17, then the virtual-thread test on
# Java 25), from surefire's summary line of each Maven run ("Tests run: N, Failures: F, Errors: E,
# Skipped: S", the one without "Time elapsed"): passed is N less the rest, failed F + E, skipped
# said apart. Skipped, with a notice, only when Maven is missing.
java_suite() {
  local started=$SECONDS status
  make --no-print-directory java-test 2>&1 | tee "$logs/java.out"
  status=${PIPESTATUS[0]}
  grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$logs/java.out" |
    awk -v took=$((SECONDS - started)) '{gsub(",", ""); n += $4; f += $6; e += $8; s += $10}
      END {printf "java: %d passed, %d failed (%d skipped) in %d.0s\n", n - f - e - s, f + e, s, took}'
  return "$status"
}

# The chaos suite's verdict ("chaos: N passed, M failed") said the way count() reads it.
chaos_suite() {
  local started=$SECONDS status verdict
  make --no-print-directory chaos-quick 2>&1 | tee "$logs/chaos.out"
  status=${PIPESTATUS[0]}
  verdict=$(grep -E '^chaos: [0-9]+ passed, [0-9]+ failed' "$logs/chaos.out" | tail -1)
  echo "${verdict:-chaos: 0 passed, 1 failed} in $((SECONDS - started)).0s"
  return "$status"
}

suite rust counted cargo test --release --no-fail-fast
suite python counted make --no-print-directory python-test
make --no-print-directory node-deps >/dev/null 2>&1
if command -v node >/dev/null 2>&1; then
  suite node counted node_suite
else
  echo "== node: SKIPPED: Node.js is not installed and could not be (make node-deps); the Node client was not tested" >&2
  lines+=("node: SKIPPED (Node.js not installed)")
fi
make --no-print-directory go-deps >/dev/null 2>&1
if command -v go >/dev/null 2>&1; then
  suite go counted go_suite
else
  echo "== go: SKIPPED: Go is not installed and could not be (make go-deps); the Go client was not tested" >&2
  lines+=("go: SKIPPED (Go not installed)")
fi
if command -v mvn >/dev/null 2>&1; then
  suite java counted java_suite
else
  echo "== java: SKIPPED: Maven is not installed; the Java client was not tested" >&2
  lines+=("java: SKIPPED (Maven not installed)")
fi
# Every example of README.md and docs/, and the packages installed from a clean clone.
suite docs counted make --no-print-directory docs-test
suite signals counted signals
suite monitoring counted make --no-print-directory monitoring-test
# The model at CI's bounds (make model-ci); make model and make model-deep explore further.
suite model status make --no-print-directory model-ci
# Real network partitions, a ~2 minute subset (make partitions-ci; root: network namespaces).
suite partitions counted make --no-print-directory partitions-ci
# The chaos suite at 8 s a scenario (make chaos-quick; make chaos runs 60 s each).
suite chaos counted chaos_suite

echo
printf 'make test: %s\n' "${lines[@]}"
echo "total: $passed passed, $failed failed"
rm -rf "$logs"
[ "$failed" -eq 0 ]
