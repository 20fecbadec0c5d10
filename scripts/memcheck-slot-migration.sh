#!/usr/bin/env bash
# `make memcheck`: the module's slot-migration paths under valgrind memcheck. For each server
# given (default: the Redis 8.6 and Valkey 9.1 that `make compat-servers` built), a 3-master
# cluster whose source node runs under valgrind; 20 locks and two waiters (WAIT 15000, WAIT 0) in
# one slot; the slot moved away atomically (on Redis once with each trim method: active, then
# background, moving it back in between); the waiters must be answered MOVED; then the source
# shuts down cleanly and valgrind must report 0 errors.
set -euo pipefail
cd "$(dirname "$0")/.."
module=$PWD/target/release/libdlock.so
servers=${*:-"$PWD/.compat/redis-8.6.3/src/redis-server $PWD/.compat/valkey-9.1.2/src/valkey-server"}
command -v valgrind >/dev/null || {
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq valgrind >/dev/null
}
KEY='lk:{a}:3'
failed=0

port_of() { echo $((21000 + RANDOM % 9000)); }

run_one() {
  local server=$1 dir base ports=() i
  dir=$(mktemp -d -t dlock-memcheck.XXXXXX)
  base=$(port_of)
  for i in 0 1 2; do
    ports+=($((base + i)))
    mkdir -p "$dir/$i"
    local wrap=()
    [ "$i" = 0 ] && wrap=(valgrind --error-exitcode=99 --log-file="$dir/valgrind.log")
    (cd "$dir/$i" && "${wrap[@]}" "$server" --port "${ports[$i]}" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 15000 --save "" --appendonly no \
      --enable-debug-command yes --loadmodule "$module" >log 2>&1 &)
  done
  for p in "${ports[@]}"; do
    until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.2; done
  done
  redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
    --cluster-yes >/dev/null
  local slot src dst kind
  slot=$(redis-cli -p "${ports[0]}" CLUSTER KEYSLOT "$KEY")
  # Put the slot on the node under valgrind first (classic SETSLOT NODE: it is empty).
  src=${ports[0]}
  for p in "${ports[@]}"; do redis-cli -p "$p" CLUSTER SETSLOT "$slot" NODE "$(redis-cli -p "$src" CLUSTER MYID)" >/dev/null; done
  sleep 1
  kind=redis
  redis-cli -p "$src" INFO server | grep -q '^server_name:valkey' && kind=valkey
  local methods=(default)
  [ "$kind" = redis ] && methods=(active bg)
  local method
  for method in "${methods[@]}"; do
    dst=${ports[1]}
    for i in $(seq 0 19); do redis-cli -p "$src" DLOCK.ACQUIRE "lk:{a}:$i" holder 60000 >/dev/null; done
    redis-cli -p "$src" DLOCK.ACQUIRE "$KEY" waiter-n 60000 WAIT 15000 >"$dir/w1" 2>&1 &
    redis-cli -p "$src" DLOCK.ACQUIRE 'lk:{a}:4' waiter-0 60000 WAIT 0 >"$dir/w2" 2>&1 &
    until redis-cli -p "$src" INFO dlock | grep -q '^dlock_waiters:2'; do sleep 0.2; done
    if [ "$kind" = redis ]; then
      redis-cli -p "$src" DEBUG ASM-TRIM-METHOD "$method" 0 >/dev/null
      redis-cli -p "$dst" CLUSTER MIGRATION IMPORT "$slot" "$slot" >/dev/null
    else
      redis-cli -p "$src" CLUSTER MIGRATESLOTS SLOTSRANGE "$slot" "$slot" NODE "$(redis-cli -p "$dst" CLUSTER MYID)" >/dev/null
    fi
    wait
    grep -q MOVED "$dir/w1" && grep -q MOVED "$dir/w2" || { echo "$server ($method): waiters not redirected" >&2; failed=1; }
    until [ "$(redis-cli -p "$src" DBSIZE)" = 0 ]; do sleep 0.2; done
    # Bring the slot back (empty of locks) for the next trim method.
    for i in $(seq 0 19); do redis-cli -c -p "$dst" DLOCK.FORCERELEASE "lk:{a}:$i" >/dev/null; done
    if [ "$kind" = redis ]; then
      redis-cli -p "$src" CLUSTER MIGRATION IMPORT "$slot" "$slot" >/dev/null
      until redis-cli -p "$src" CLUSTER MIGRATION STATUS ALL | grep -q completed; do sleep 0.2; done
      sleep 1
    fi
  done
  redis-cli -p "$src" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  for p in "${ports[@]:1}"; do redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; done
  sleep 2
  local summary
  summary=$(grep -h 'ERROR SUMMARY' "$dir/valgrind.log" || echo "no summary")
  echo "$(basename "$server") $("$server" --version | grep -o 'v=[^ ]*'): $summary"
  grep -q 'ERROR SUMMARY: 0 errors' "$dir/valgrind.log" || { failed=1; echo "  see $dir/valgrind.log" >&2; }
}

for server in $servers; do run_one "$server"; done
exit $failed
