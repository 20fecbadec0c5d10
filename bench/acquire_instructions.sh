#!/usr/bin/env bash
# Instructions and simulated cache misses per call (callgrind --cache-sim) of DLOCK.ACQUIRE
# against SET NX PX, on a server with the module and, for SET, on one without it: docs/bench.md
# section 1, "Where an ACQUIRE's time goes".
# usage: bench/acquire_instructions.sh MODULE_PATH [CALLS]   (needs valgrind and redis-benchmark;
# the server is $REDIS_SERVER, else redis-server from the PATH)
set -euo pipefail
module=$(realpath "$1")
calls=${2:-100000}
server=${REDIS_SERVER:-redis-server}
owner=6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One server under callgrind: `calls` commands of distinct keys (none for a baseline run, which
# counts the server's start and shutdown, subtracted below).
measure() {
  local name=$1 load=$2 port
  shift 2
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$out/$name" "$server" \
    --port "$port" --save "" --appendonly no $load >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  [ $# -gt 0 ] && redis-benchmark -p "$port" -n "$calls" -r 1000000000 -P 50 -c 1 -q "$@" >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
}

# Per-call inclusive instructions of the functions named by the pattern.
report() {
  callgrind_annotate --auto=no --inclusive=yes --show=Ir "$out/$1" 2>/dev/null |
    grep -E "\?\?\?:($2) |owner::pack " | grep -v "=>" | sed -E 's/\([ 0-9.]+%\)//g' |
    awk -v n="$calls" -v side="$1" '{gsub(",","",$1); printf "%-12s %-40s %6.0f instructions per call\n", side, $2, $1/n}'
}

# Whole-run totals: instructions, L1 instruction misses in the module's code (its Rust, the
# Rust standard library and crates), in Redis's and elsewhere (libc, jemalloc), L1 data misses,
# last-level data misses, and the instructions run in the module's code.
totals() {
  callgrind_annotate --auto=no --show=Ir,I1mr,D1mr,D1mw,DLmr,DLmw --threshold=100 "$out/$1" 2>/dev/null |
    grep -E "^ *[0-9,]+ " | sed -E 's/\([ 0-9.]+%\)//g; s/,//g' |
    awk -v so="$(basename "$module")" '/PROGRAM TOTALS/ {ir=$1; d1=$3+$4; ll=$5+$6; next}
         index($0, so) || /\/rustc\/|\.cargo\/registry/ {mod+=$2; modir+=$1; next}
         /redis-server|redis-check-rdb/ {red+=$2; next}
         {oth+=$2}
         END {print ir+0, mod+0, red+0, oth+0, d1+0, ll+0, modir+0}'
}

measure base "--loadmodule $module"
measure acquire "--loadmodule $module" DLOCK.ACQUIRE "k:__rand_int__" "$owner" 3600000
measure set "--loadmodule $module" SET "k:__rand_int__" "$owner" NX PX 3600000
measure set-plain-base ""
measure set-plain "" SET "k:__rand_int__" "$owner" NX PX 3600000
report acquire "call|RM_ModuleTypeSetValue|RM_SetAbsExpire|RM_OpenKey|RM_CloseKey|RM_ReplyWithLongLong"
report set "call|moduleNotifyKeyspaceEvent|moduleCallCommandFilters"
report set-plain "call"

echo
echo "Whole server per call ($calls calls of distinct keys, pipelined 50 deep; start and shutdown subtracted):"
echo
echo "| per call | instructions | of them in module code | L1i misses | in module code | in Redis code | elsewhere | L1d misses | last-level data misses |"
echo "|---|---|---|---|---|---|---|---|---|"
for pair in "DLOCK.ACQUIRE:acquire:base" "SET NX PX, module loaded:set:base" \
  "SET NX PX, no module:set-plain:set-plain-base"; do
  IFS=: read -r label side baseline <<<"$pair"
  paste -d' ' <(totals "$side") <(totals "$baseline") |
    awk -v n="$calls" -v l="$label" '{printf "| %s | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n",
      l, ($1-$8)/n, ($7-$14)/n, ($2+$3+$4-$9-$10-$11)/n, ($2-$9)/n, ($3-$10)/n, ($4-$11)/n, ($5-$12)/n, ($6-$13)/n}'
done
