#!/usr/bin/env bash
# Two builds of the module side by side, counted by callgrind in one run: instructions per call
# of DLOCK.ACQUIRE on a free key (a grant) and on a key the same owner holds (a reentrant
# renewal, changed in place), over the whole server and in the module's own code, rounds
# alternating which build goes first. What a change to the module cost (docs/bench/instructions.md).
# usage: bench/instructions_ab.sh OLD_MODULE NEW_MODULE [ROUNDS] [CALLS]   (valgrind and
# redis-benchmark needed; the server is $REDIS_SERVER, else redis-server from the PATH; build the
# old module from a git worktree of the commit before the change)
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-2}
calls=${4:-20000}
server=${REDIS_SERVER:-redis-server}
owner=6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT

# One process under callgrind running `calls` commands, counters zeroed just before them; prints
# the instructions over the whole process and those in the module's code (by its file name, the
# Rust standard library and crates), summed over the calls and the shutdown.
count() {
  local module=$1 file=$2 port pid
  shift 2
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$file" "$server" --port "$port" --save "" \
    --appendonly no --loadmodule "$module" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  callgrind_control --zero "$pid" >/dev/null 2>&1
  redis-benchmark -p "$port" -n "$calls" -r 1000000000 -P 50 -c 1 -q "$@" >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  callgrind_annotate --auto=no --show=Ir --threshold=100 "$file" 2>/dev/null |
    grep -E "^ *[0-9,]+ " | sed -E 's/\([ 0-9.]+%\)//g; s/,//g' |
    awk -v so="$(basename "$module")" '/PROGRAM TOTALS/ {ir=$1; next}
      index($0, so) || /\/rustc\/|\.cargo\/registry/ {mod+=$1}
      END {print ir+0, mod+0}'
}

# Per-call figures of one build for one workload, appended to $out/NAME.
measure() {
  local name=$1 module=$2 workload=$3 key
  case $workload in
    grant) key="k:__rand_int__" ;;
    renewal) key="held" ;;
  esac
  count "$module" "$out/cg.$name.$workload.$RANDOM" DLOCK.ACQUIRE "$key" "$owner" 3600000 \
    >>"$out/$name.$workload"
}

for round in $(seq "$rounds"); do
  for workload in grant renewal; do
    if [ $((round % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for side in $order; do
      if [ "$side" = old ]; then measure old "$old" "$workload"; else measure new "$new" "$workload"; fi
    done
  done
done

echo "Instructions per DLOCK.ACQUIRE ($rounds rounds of $calls calls per build, alternating order):"
echo
echo "| call | whole server, old | whole server, new | new/old | module code, old | module code, new | new/old |"
echo "|---|---|---|---|---|---|---|"
for workload in grant renewal; do
  paste "$out/old.$workload" "$out/new.$workload" |
    awk -v n="$calls" -v w="$workload" '{ow+=$1; om+=$2; nw+=$3; nm+=$4; k++}
      END {printf "| %s | %.0f | %.0f | %.3f | %.0f | %.0f | %.3f |\n",
        w, ow/n/k, nw/n/k, nw/ow, om/n/k, nm/n/k, nm/om}'
done
