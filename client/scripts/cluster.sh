#!/usr/bin/env bash
# `make cluster`: five local Redis masters with the dlock module on ports 7001-7005 (or the ones
# CLUSTER_PORTS lists, when those are taken), data in a temp dir. Foreground; Ctrl-C stops them and
# removes the data.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
module="$root/target/release/libdlock.so"
[ -f "$module" ] || { echo "missing $module: run make build" >&2; exit 1; }
data=$(mktemp -d -t dlock-cluster-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT INT TERM
read -r -a ports <<<"${CLUSTER_PORTS:-7001 7002 7003 7004 7005}"
nodes=()
for port in "${ports[@]}"; do
  mkdir -p "$data/$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$data/$port" --save "" \
    --appendonly yes --appendfsync always --logfile "$data/$port/redis.log" \
    --loadmodule "$module" &
  pids+=($!)
  nodes+=("redis://127.0.0.1:$port")
done
for port in "${ports[@]}"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
echo "${#ports[@]} masters up (data in $data). In another shell:"
echo "  export DLOCK_NODES=$(IFS=,; echo "${nodes[*]}")"
echo "  target/release/dlock run my-job -- sh -c 'echo token \$DLOCK_TOKEN'"
echo "Ctrl-C stops them."
wait
