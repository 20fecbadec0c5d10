#!/usr/bin/env bash
# `make compat`: the module's and the client's integration tests (and the Python client's
# slot-migration tests, skipped where the server has no atomic slot migration) against every
# server binary in DLOCK_REDIS_SERVERS (space-separated paths). Without it: the servers
# `make compat-servers` listed in .compat/servers, or else the redis-server on the PATH. Prints one
# line per server and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
listed=.compat/servers
if [ -z "${DLOCK_REDIS_SERVERS:-}" ] && [ -s "$listed" ]; then
  DLOCK_REDIS_SERVERS=$(tr '\n' ' ' <"$listed")
fi
servers=${DLOCK_REDIS_SERVERS:-$(command -v redis-server)}
failed=0
results=()
for server in $servers; do
  version=$("$server" --version | grep -o 'v=[^ ]*' | cut -c3-)
  name=$(basename "$server" | sed 's/-server//')
  log=$(mktemp -t dlock-compat.XXXXXX)
  echo "== $name $version ($server)" >&2
  if DLOCK_REDIS_SERVER="$server" cargo test --release -q --no-fail-fast -p dlock -p dlock-client -p dlock-cli --tests >"$log" 2>&1 &&
    (cd python && DLOCK_REDIS_SERVER="$server" .venv/bin/python -m pytest -q -p timeout --timeout 120 \
      tests/test_slot_migration.py) >>"$log" 2>&1; then
    passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s}')
    results+=("$name $version: pass ($passed tests)")
  else
    failed=1
    results+=("$name $version: FAIL (log: $log)")
    grep -E '^test .* FAILED|panicked at' "$log" | head -20 >&2
  fi
done
printf '%s\n' "${results[@]}"
exit $failed
