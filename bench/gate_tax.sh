#!/usr/bin/env bash
# What a node that holds a gate pays on other keys (docs/bench/gate-tax.md): once it stored a gate, the module listens to the generic keyspace events (so that a
# TTL set on a gate is taken off at once). Two servers with the module, one holding a gate and
# one not, the same keys; EXPIRE (its `expire` event makes the module open the key) and DEL
# (the event only), pipelined by redis-benchmark; Redis's own usec_per_call of each command
# compared, the servers taken in alternating order, ROUNDS times.
set -euo pipefail
module=${DLOCK_MODULE:-$(cd "$(dirname "$0")/.." && pwd)/target/release/libdlock.so}
rounds=${ROUNDS:-5}
keys=200000
dir=$(mktemp -d -t dlock-gate-tax.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gate=$(free_port) plain=$(free_port)
trap 'redis-cli -p $gate shutdown nosave >/dev/null 2>&1 || true; redis-cli -p $plain shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for p in $gate $plain; do
  redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --loadmodule "$module" \
    --daemonize yes --logfile "$dir/$p.log" --dir "$dir"
done
sleep 0.5
redis-cli -p "$gate" DLOCK.GUARD gate 5 SET data v >/dev/null
per_call() { # port, command: Redis's usec_per_call of the command over one run
  local port=$1 cmd=$2
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  redis-benchmark -p "$port" -q -n $keys -r $keys -P 32 "$cmd" key:__rand_int__ ${EXTRA:-} >/dev/null
  redis-cli -p "$port" INFO commandstats | grep "cmdstat_$(echo "$cmd" | tr 'A-Z' 'a-z'):" |
    tr ',' '\n' | sed -n 's/usec_per_call=//p'
}
declare -A sum
for round in $(seq "$rounds"); do
  order=("$plain" "$gate"); [ $((round % 2)) -eq 0 ] && order=("$gate" "$plain")
  for p in "${order[@]}"; do
    redis-benchmark -p "$p" -q -n $keys -r $keys -P 32 SET key:__rand_int__ v >/dev/null
    e=$(EXTRA=100000 per_call "$p" EXPIRE)
    d=$(per_call "$p" DEL)
    sum[$p.expire]=$(awk -v a="${sum[$p.expire]:-0}" -v b="$e" 'BEGIN { print a + b }')
    sum[$p.del]=$(awk -v a="${sum[$p.del]:-0}" -v b="$d" 'BEGIN { print a + b }')
  done
done
for cmd in expire del; do
  awk -v c="$cmd" -v g="${sum[$gate.$cmd]}" -v n="${sum[$plain.$cmd]}" -v r="$rounds" 'BEGIN {
    printf "%-6s  holding a gate %.3f us  not %.3f us  ratio %.2fx  (%d rounds)\n", c, g / r, n / r, g / n, r }'
done
