#!/usr/bin/env bash
# Instructions and simulated cache misses per call (callgrind --cache-sim) of DLOCK.ACQUIRE
# against SET NX PX, on a server with the module and, for SET, on one without it:
# docs/bench/instructions.md.
# usage: bench/acquire_instructions.sh MODULE_PATH [CALLS]   (needs valgrind and redis-benchmark;
# the server is $REDIS_SERVER, else redis-server from the PATH)
set -euo pipefail
module=$(realpath "$1")
calls=${2:-25000}
# Server processes per measure, their counts summed: each process draws a random hash seed, which
# decides which command names share a bucket of its command table and moves a SET's count by
# 1-2% from one process to the next (docs/bench/tax.md).
processes=4
server=${REDIS_SERVER:-redis-server}
owner=6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT

# One measure: `processes` servers under callgrind, each running `calls` commands of distinct
# keys, its counters zeroed just before them (callgrind_control), so that the commands and the
# shutdown after them are counted ($out/NAME.K) with no other run subtracted. (A dump taken while
# the server waits in its event loop would charge its event loop's whole cost to main() as its own.)
measure() {
  local name=$1 load=$2 port pid k
  shift 2
  for k in $(seq "$processes"); do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$out/$name.$k" "$server" \
      --port "$port" --save "" --appendonly no $load >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
    callgrind_control --zero "$pid" >/dev/null 2>&1
    redis-benchmark -p "$port" -n "$calls" -r 1000000000 -P 50 -c 1 -q "$@" >/dev/null
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" || true
  done
}

# Per-call inclusive instructions of the functions named by the pattern, over all processes.
report() {
  local file
  for file in "$out/$1".[0-9]*; do
    callgrind_annotate --auto=no --inclusive=yes --show=Ir "$file" 2>/dev/null |
      grep -E "\?\?\?:($2) |owner::pack " | grep -v "=>" | sed -E 's/\([ 0-9.]+%\)//g'
  done | awk -v n="$((calls * processes))" -v side="$1" '{gsub(",", "", $1); sum[$2] += $1; if (!($2 in seen)) {seen[$2] = 1; order[++k] = $2}}
    END {for (i = 1; i <= k; i++) printf "%-12s %-40s %6.0f instructions per call\n", side, order[i], sum[order[i]]/n}'
}

# A measure's totals, summed over its processes: instructions, L1 instruction misses in the
# module's code (its Rust, the Rust standard library and crates), in Redis's and elsewhere (libc,
# jemalloc), L1 data misses, last-level data misses, and the instructions run in the module's code.
# The frames that were running when the counters were zeroed (main and the event loop, libc's and
# the loader's start code) are listed with their callees' costs as their own, so Redis's share is
# the rest of the total and those outside Redis are skipped.
totals() {
  local file
  for file in "$out/$1".[0-9]*; do
    callgrind_annotate --auto=no --show=Ir,I1mr,D1mr,D1mw,DLmr,DLmw --threshold=100 "$file" 2>/dev/null |
      grep -E "^ *[0-9,]+ " | sed -E 's/\([ 0-9.]+%\)//g; s/,//g' |
      awk -v so="$(basename "$module")" '/PROGRAM TOTALS/ {ir=$1; i1=$2; d1=$3+$4; ll=$5+$6; next}
           /\(below main\)|__libc_start_main|ld-linux/ {next}
           index($0, so) || /\/rustc\/|\.cargo\/registry/ {mod+=$2; modir+=$1; next}
           /redis-server|redis-check-rdb/ {next}
           {oth+=$2}
           END {print ir+0, mod+0, i1-mod-oth, oth+0, d1+0, ll+0, modir+0}'
  done | awk '{for (i = 1; i <= NF; i++) s[i] += $i} END {print s[1], s[2], s[3], s[4], s[5], s[6], s[7]}'
}

measure acquire "--loadmodule $module" DLOCK.ACQUIRE "k:__rand_int__" "$owner" 3600000
measure set "--loadmodule $module" SET "k:__rand_int__" "$owner" NX PX 3600000
measure set-plain "" SET "k:__rand_int__" "$owner" NX PX 3600000
report acquire "call|RM_ModuleTypeSetValue|RM_SetAbsExpire|RM_OpenKey|RM_CloseKey|RM_ReplyWithLongLong"
report set "call|moduleNotifyKeyspaceEvent|moduleCallCommandFilters"
report set-plain "call"

echo
echo "Whole server per call ($calls calls of distinct keys in each of $processes processes, pipelined 50 deep; the calls and the shutdown):"
echo
echo "| per call | instructions | of them in module code | L1i misses | in module code | in Redis code | elsewhere | L1d misses | last-level data misses |"
echo "|---|---|---|---|---|---|---|---|---|"
for pair in "DLOCK.ACQUIRE:acquire" "SET NX PX, module loaded:set" "SET NX PX, no module:set-plain"; do
  IFS=: read -r label side <<<"$pair"
  totals "$side" |
    awk -v n="$((calls * processes))" -v l="$label" '{printf "| %s | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n",
      l, $1/n, $7/n, ($2+$3+$4)/n, $2/n, $3/n, $4/n, $5/n, $6/n}'
done
