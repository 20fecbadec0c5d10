#!/usr/bin/env bash
# Instructions per call (callgrind) of DLOCK.ACQUIRE against SET NX PX, on a server with the
# module and, for SET, on one without it: docs/bench.md section 1, "Where an ACQUIRE's time goes".
# usage: bench/acquire_instructions.sh MODULE_PATH [CALLS]   (needs valgrind and redis-benchmark;
# the server is $REDIS_SERVER, else redis-server from the PATH)
set -euo pipefail
module=$(realpath "$1")
calls=${2:-20000}
server=${REDIS_SERVER:-redis-server}
owner=6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One server under callgrind, `calls` commands of distinct keys, then the per-call counts of the
# functions named on the command line.
measure() {
  local name=$1 load=$2 port
  shift 2
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$out/$name" "$server" --port "$port" --save "" \
    --appendonly no $load >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  redis-benchmark -p "$port" -n "$calls" -r 1000000000 -P 50 -c 1 -q "$@" >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
}

report() {
  callgrind_annotate --inclusive=yes "$out/$1" 2>/dev/null |
    grep -E "\?\?\?:($2) |owner::pack " | grep -v "=>" | sed 's/([ 0-9.]*%)//' |
    awk -v n="$calls" -v side="$1" '{gsub(",","",$1); printf "%-12s %-40s %6.0f instructions per call\n", side, $2, $1/n}'
}

measure acquire "--loadmodule $module" DLOCK.ACQUIRE "k:__rand_int__" "$owner" 3600000
measure set "--loadmodule $module" SET "k:__rand_int__" "$owner" NX PX 3600000
measure set-plain "" SET "k:__rand_int__" "$owner" NX PX 3600000
report acquire "call|RM_ModuleTypeSetValue|RM_SetAbsExpire|RM_OpenKey|RM_CloseKey|RM_ReplyWithLongLong"
report set "call|moduleNotifyKeyspaceEvent"
report set-plain "call"
