#!/usr/bin/env bash
# `make compat-upgrade`: an old master replicating to a replica with today's module, the order of
# an upgrade with replicas (docs/operations.md, "Upgrades"). For each earlier release (the last
# commit of 0.2, 0.3 and 0.4): a master with that release's module and a replica with
# target/release/libdlock.so, both the redis-server on the PATH, then
#
#   1. every kind the old module has, taken on the master: a lock fenced to 100, a reentrant hold
#      taken twice, a shared lock, a downgrade, a semaphore, a gate (0.3 on) and the counter
#      raised to 7000 by a lock since released;
#   2. REPLICAOF: the full sync, then every key's DLOCK.STATUS (less the ttl, which moves), the
#      gate, the guarded key, the counter and, where both modules digest alike, DEBUG DIGEST
#      equal on both;
#   3. writes on the master after the sync (an acquire, a release, an extend, a guarded write, a
#      second reader), streamed, and seen on the replica;
#   4. REPLICAOF NO ONE on the replica: its next grant is above every token of the old master.
#
# The old modules are built from those commits when .compat/old/<version>/libdlock.so is
# missing: a `git worktree add --detach` into a temp dir (removed after), cargo's target dir in
# .compat/old/target-<version> (git-ignored, reused; COMPAT_OLD_TARGETS=dir puts them elsewhere).
# ONLY="0.3 0.4" runs those releases alone. Every wait is bounded (WAIT_S seconds, default 20),
# servers are killed on exit, ports are free ones. Needs `cargo build --release` first (make
# does). Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
new=$root/target/release/libdlock.so
[ -f "$new" ] || { echo "compat-upgrade: $new is missing: cargo build --release" >&2; exit 1; }
old_dir=$root/.compat/old
targets=${COMPAT_OLD_TARGETS:-$old_dir}
WAIT_S=${WAIT_S:-20}
TTL=600000
# version | the last commit of that release
releases=("0.2 ad8384b" "0.3 c29638a" "0.4 454c147")

work=$(mktemp -d -t dlock-upgrade.XXXXXX)
pids=()
ports=()
tree=
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  if [ -n "$tree" ]; then
    git -C "$root" worktree remove --force "$tree" 2>/dev/null || true
    rm -rf "$(dirname "$tree")"
    git -C "$root" worktree prune
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "compat-upgrade: $*" >&2
  for log in "$work"/*/redis.log; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -15 "$log" >&2; }
  done
  exit 1
}

# Builds release $1 from commit $2 into .compat/old/$1/libdlock.so, unless it is there.
build_old() {
  local version=$1 commit=$2 so=$old_dir/$1/libdlock.so
  [ -f "$so" ] && return
  echo "== building dlock $version ($commit)" >&2
  tree=$(mktemp -d -t dlock-old-src.XXXXXX)/tree
  git -C "$root" worktree add --detach -q "$tree" "$commit"
  (cd "$tree" && CARGO_TARGET_DIR=$targets/target-$version nice cargo build --release -q -p dlock)
  mkdir -p "$old_dir/$version"
  cp "$targets/target-$version/release/libdlock.so" "$so"
  git -C "$root" worktree remove --force "$tree"
  rm -rf "$(dirname "$tree")"
  tree=
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME MODULE: a server in $work/NAME, on a free port it leaves in $port.
start() {
  local name=$1 module=$2
  port=$(free_port)
  ports+=("$port")
  mkdir -p "$work/$name"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$name" --logfile redis.log \
    --daemonize no --save "" --appendonly no --enable-debug-command yes \
    --loadmodule "$module" --dlock.clock-floor no >/dev/null 2>&1 &
  pids+=($!)
  until_true "$name answers" redis-cli -p "$port" PING
}

# until_true WHAT CMD...: runs CMD every 0.1 s until it succeeds, for at most WAIT_S seconds.
until_true() {
  local what=$1 i
  shift
  for ((i = 0; i < WAIT_S * 10; i++)); do
    "$@" >/dev/null 2>&1 && return
    sleep 0.1
  done
  fail "not within ${WAIT_S}s: $what"
}

cli() { redis-cli -p "$@"; }

# expect WANT PORT CMD...: the reply must be WANT.
expect() {
  local want=$1 port=$2 got
  shift 2
  got=$(cli "$port" "$@")
  [ "$got" = "$want" ] || fail "$* on $port replied '$got', expected '$want'"
}

# The replica is in sync: link up, no sync running, its offset at the master's.
synced() {
  local master=$1 replica=$2 m r
  cli "$replica" INFO replication | grep -q 'master_link_status:up' || return 1
  m=$(cli "$master" INFO replication | sed -n 's/^master_repl_offset:\([0-9]*\).*/\1/p')
  r=$(cli "$replica" INFO replication | sed -n 's/^slave_repl_offset:\([0-9]*\).*/\1/p')
  [ -n "$m" ] && [ "$m" = "$r" ]
}

# A key's DLOCK.STATUS without the ttl values (they move), holders sorted.
view() {
  cli "$1" DLOCK.STATUS "$2" | awk 'skip { skip = 0; next } /^ttl$/ { skip = 1; next } { print }' | sort
}

# gate_at PORT TOKEN: fx:gate stands at TOKEN (DLOCK.CHECK refuses TOKEN-1, admits TOKEN).
gate_at() {
  [ "$(cli "$1" DLOCK.CHECK fx:gate "$(($2 - 1))")" = 0 ] && [ "$(cli "$1" DLOCK.CHECK fx:gate "$2")" = 1 ]
}

# Every key, the gate, the guarded key and the counter: the same on both.
same_state() {
  local master=$1 replica=$2 key
  for key in fx:plain fx:reentrant fx:shared fx:semaphore fx:downgraded fx:after fx:gone; do
    [ "$(view "$master" "$key")" = "$(view "$replica" "$key")" ] ||
      fail "$key differs: master '$(view "$master" "$key" | tr '\n' ' ')', replica '$(view "$replica" "$key" | tr '\n' ' ')'"
  done
  if [ "$gates" = 1 ]; then
    gate_at "$master" "$gate" || fail "the master's gate is not at $gate"
    gate_at "$replica" "$gate" || fail "the replica's gate is not at $gate"
    [ "$(cli "$master" GET fx:data)" = "$(cli "$replica" GET fx:data)" ] || fail "fx:data differs"
  fi
  [ "$(cli "$master" DBSIZE)" = "$(cli "$replica" DBSIZE)" ] || fail "DBSIZE differs"
  [ "$(cli "$master" DLOCK.COUNTER)" = "$(cli "$replica" DLOCK.COUNTER)" ] || fail "the counters differ"
}

# Step 1 on the master: every kind that release has.
take_everything() {
  local m=$1
  expect 1 "$m" DLOCK.ACQUIRE fx:plain alice "$TTL"
  expect 1 "$m" DLOCK.FENCE fx:plain alice 100
  expect 101 "$m" DLOCK.ACQUIRE fx:reentrant owner-r "$TTL" REENTRANT
  expect 101 "$m" DLOCK.ACQUIRE fx:reentrant owner-r "$TTL" REENTRANT
  expect 102 "$m" DLOCK.ACQUIRE fx:shared reader-1 "$TTL" SHARED
  expect 103 "$m" DLOCK.ACQUIRE fx:shared reader-2 "$TTL" SHARED
  expect 104 "$m" DLOCK.ACQUIRE fx:semaphore job-1 "$TTL" LIMIT 3
  expect 105 "$m" DLOCK.ACQUIRE fx:downgraded writer "$TTL"
  expect 105 "$m" DLOCK.ACQUIRE fx:downgraded writer "$TTL" SHARED
  [ "$gates" = 1 ] && expect OK "$m" DLOCK.GUARD fx:gate 100 SET fx:data "under 100"
  expect 106 "$m" DLOCK.ACQUIRE fx:gone carol "$TTL"
  expect 1 "$m" DLOCK.FENCE fx:gone carol 7000
  expect 1 "$m" DLOCK.RELEASE fx:gone carol
  expect 7000 "$m" DLOCK.COUNTER
}

# Step 3 on the master, after the sync.
write_after_sync() {
  local m=$1
  expect 7001 "$m" DLOCK.ACQUIRE fx:after bob "$TTL"
  expect 1 "$m" DLOCK.RELEASE fx:plain alice
  expect 1 "$m" DLOCK.EXTEND fx:reentrant owner-r "$((TTL * 2))"
  expect 7002 "$m" DLOCK.ACQUIRE fx:shared reader-3 "$TTL" SHARED
  [ "$gates" = 1 ] && expect OK "$m" DLOCK.GUARD fx:gate 7001 SET fx:data "under 7001"
  return 0
}

# The digests, where both modules digest a value alike: the whole dataset's, else the keys whose
# DEBUG DIGEST-VALUE differ (a module's digest callback may change between releases).
digests() {
  local key differ=()
  if [ "$(cli "$1" DEBUG DIGEST)" = "$(cli "$2" DEBUG DIGEST)" ]; then
    echo "DEBUG DIGEST equal"
    return
  fi
  for key in $(cli "$1" KEYS '*' | sort); do
    [ "$(cli "$1" DEBUG DIGEST-VALUE "$key")" = "$(cli "$2" DEBUG DIGEST-VALUE "$key")" ] || differ+=("$key")
  done
  echo "DEBUG DIGEST differs, DIGEST-VALUE of ${differ[*]:-no key}"
}

one_release() {
  local version=$1 module=$old_dir/$1/libdlock.so master replica started=$SECONDS
  start "m$version" "$module"
  master=$port
  start "r$version" "$new"
  replica=$port
  gates=0
  [ -n "$(cli "$master" COMMAND INFO DLOCK.GUARD | tr -d '[:space:]')" ] && gates=1
  take_everything "$master"
  gate=100
  expect OK "$replica" REPLICAOF 127.0.0.1 "$master"
  until_true "$version: the replica in sync" synced "$master" "$replica"
  same_state "$master" "$replica"
  local digest_note
  digest_note=$(digests "$master" "$replica")
  write_after_sync "$master"
  gate=7001
  until_true "$version: the writes after the sync streamed" synced "$master" "$replica"
  same_state "$master" "$replica"
  [ "$(view "$replica" fx:plain)" = "" ] || fail "fx:plain still held on the replica"
  [ "$gates" = 0 ] || expect "under 7001" "$replica" GET fx:data
  expect OK "$replica" REPLICAOF NO ONE
  local token
  token=$(cli "$replica" DLOCK.ACQUIRE fx:new dave "$TTL")
  [ "$token" -gt 7002 ] 2>/dev/null || fail "$version: the promoted replica granted $token, not above 7002"
  ! grep -lE 'crashed by signal|ASSERTION FAILED|dlock panicked' "$work"/*/redis.log || fail "a server crashed"
  for port in "${ports[@]}"; do cli "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=() ports=()
  echo "dlock $version -> today: pass (gates: $gates; $digest_note; new token $token; $((SECONDS - started)) s)"
}

begin=$SECONDS
chosen=()
for release in "${releases[@]}"; do
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" ${release%% *} "* ]] && chosen+=("$release")
done
[ ${#chosen[@]} -gt 0 ] || fail "ONLY='${ONLY:-}' names no release of: ${releases[*]}"
for release in "${chosen[@]}"; do
  build_old $release
done
for release in "${chosen[@]}"; do
  one_release ${release%% *}
done
echo "compat-upgrade: every release passed in $((SECONDS - begin)) s"
