#!/usr/bin/env bash
# `make redis-cluster`: a local Redis Cluster with the dlock module, 3 masters and 3 replicas on
# ports 7101-7106 (or the six REDIS_CLUSTER_PORTS lists; made with redis-cli --cluster create), data
# in a temp dir. Foreground; Ctrl-C stops them and removes the data.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
module="$root/target/release/libdlock.so"
[ -f "$module" ] || { echo "missing $module: run make build" >&2; exit 1; }
data=$(mktemp -d -t dlock-redis-cluster-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT INT TERM
read -r -a ports <<<"${REDIS_CLUSTER_PORTS:-7101 7102 7103 7104 7105 7106}"
for port in "${ports[@]}"; do
  mkdir -p "$data/$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$data/$port" --save "" \
    --appendonly no --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 2000 --logfile "$data/$port/redis.log" \
    --loadmodule "$module" &
  pids+=($!)
done
for port in "${ports[@]}"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") \
  --cluster-replicas 1 --cluster-yes >"$data/create.log"
for _ in $(seq 100); do
  redis-cli -p "${ports[0]}" cluster info | grep -q cluster_state:ok && break
  sleep 0.1
done
echo "Redis Cluster up: 3 masters + 3 replicas on ${ports[*]} (data in $data). In another shell:"
echo "  export DLOCK_NODES=redis+cluster://127.0.0.1:${ports[0]}"
echo "  target/release/dlock run my-job -- sh -c 'echo token \$DLOCK_TOKEN'"
echo "Ctrl-C stops them."
wait
