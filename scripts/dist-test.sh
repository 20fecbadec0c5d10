#!/usr/bin/env bash
# make dist-test: installs the release artifacts in dist/ (make dist) as a user would, on a clean
# Debian 13 (trixie) root with no source tree and no Rust toolchain, and checks what each step
# does (docs/releasing.md). Root only (debootstrap, chroot, mount).
#
# The root: debootstrap --variant=minbase trixie from deb.debian.org, cached as a tarball in
# .dist-test/ (git-ignored); every run extracts a fresh root from it (.dist-test/root), mounts
# /proc (unmounted on every exit path we can trap; a root a SIGKILLed run left behind is cleaned up
# at the next start: its processes killed, every mount under it unmounted, and it is never deleted
# while anything is still mounted inside it), copies resolv.conf, installs a policy-rc.d that refuses
# to start services, and copies in dist/'s files (into /dist) and nothing else.
# The user's commands are docs/install.md's ```sh dist step=NAME blocks, run verbatim (bash, in
# /dist) at their step; tests/docs/test_docs.py checks this script runs every step the page has.
# The README's Python and Node examples are taken from README.md (tests/docs/examples.py --json)
# and their output compared with the page's.
# Redis: the package's redis.conf (127.0.0.1:6379, the host's network): 6379 taken on the host
# fails the run, unless DIST_TEST_PORT=N (the root's redis.conf is then set to N, and said).
# Client artifacts missing (scripts/dist-clients.sh not run): those steps say SKIPPED and the
# run fails at the end, unless DIST_TEST_PARTIAL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dist=$(realpath -m "${DIST_TEST_DIST:-$repo/dist}")  # DIST_TEST_DIST: another folder make dist filled
cache_dir=$repo/.dist-test
base=$cache_dir/trixie-minbase.tar.gz
root=$cache_dir/root
port=${DIST_TEST_PORT:-6379}
mirror=${DIST_TEST_MIRROR:-$(scripts/debian-mirror.sh)}  # the one this machine's apt uses
skipped=()
start=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "dist-test: needs root (debootstrap, chroot, mount)" >&2; exit 1; }

# The root's processes and mounts: ours, or a killed run's (kill -9 traps nothing).
mounts_under_root() { # the mount points at or under $root, deepest first
  awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
kill_root_processes() { # every process whose root is ours (Redis, by service or by hand)
  local p killed=
  for p in /proc/[0-9]*; do
    # "(deleted)": a killed run's server whose root was deleted under it.
    case "$(readlink "$p/root" 2>/dev/null)" in
      "$root" | "$root (deleted)") kill -9 "${p#/proc/}" 2>/dev/null && killed=yes ;;
    esac
  done
  [ -z "$killed" ] || sleep 0.3
}
unmount_root() {
  local m
  for m in $(mounts_under_root); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}
wipe_root() { # never rm -rf through a mounted /proc or a bind mount: refuse loudly
  [ -e "$root" ] || return 0
  kill_root_processes
  unmount_root
  local left; left=$(mounts_under_root)
  if [ -n "$left" ]; then
    echo "dist-test: REFUSING to delete $root: still mounted inside it (unmount by hand):" >&2
    printf '  %s\n' "$left" >&2
    exit 1
  fi
  rm -rf --one-file-system "$root"
}
if [ -e "$root" ]; then
  stale=$(mounts_under_root | tr '\n' ' ')
  [ -z "$stale" ] || echo "== dist-test: a previous run's root is still mounted ($stale): unmounting"
  kill_root_processes
  unmount_root
fi
ls "$dist"/redis-dlock_*_amd64.deb "$dist"/dlock_*_amd64.deb "$dist"/SHA256SUMS >/dev/null 2>&1 ||
  { echo "dist-test: dist/ has no packages: run make dist first" >&2; exit 1; }
if ss -Hltn "sport = :$port" | grep -q .; then
  echo "dist-test: port $port is taken on this host (the root shares its network): stop that server, or DIST_TEST_PORT=N make dist-test" >&2
  exit 1
fi

phase_start=$start
phase() { # ends the phase before (its time), starts NAME
  local now; now=$(date +%s)
  [ -z "${phase_name:-}" ] || echo "== dist-test: $phase_name: $((now - phase_start)) s"
  phase_name=$1; phase_start=$now
  [ -z "$1" ] || echo "== dist-test: $1"
}
fail() { echo "dist-test: FAILED: $*" >&2; exit 1; }
ok() { echo "   ok: $*"; }

# Every process whose root is ours is killed, then everything mounted under it unmounted.
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -d "$root" ] || exit $rc
  kill_root_processes
  unmount_root
  [ -z "$(mounts_under_root)" ] || echo "dist-test: still mounted under $root: $(mounts_under_root | tr '\n' ' ')" >&2
  if [ $rc -ne 0 ]; then
    echo "dist-test: failed (status $rc); the root is kept in $root for a look" >&2
  elif [ -z "$(mounts_under_root)" ]; then
    rm -rf --one-file-system "$root" # passed: 2 GB no one needs (the next run starts fresh anyway)
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# in_root SECONDS SCRIPT: bash -e in the root, as root, a clean environment, bounded.
in_root() {
  timeout --kill-after=5 "$1" chroot "$root" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive bash -eo pipefail -c "cd /dist; $2"
}
# redis_up PORT SECONDS: PING answers within SECONDS.
redis_up() {
  in_root "$(($2 + 5))" "for i in \$(seq $(($2 * 10))); do redis-cli -p $1 ping 2>/dev/null | grep -q PONG && exit 0; sleep 0.1; done; exit 1"
}
redis_down() { # PORT SECONDS: nothing listens any more
  in_root "$(($2 + 5))" "for i in \$(seq $(($2 * 10))); do redis-cli -p $1 ping >/dev/null 2>&1 || exit 0; sleep 0.1; done; exit 1"
}
# The docs' blocks: docs/install.md's `sh dist` ones by step, README.md's examples.
blocks_json=$(python3 tests/docs/examples.py --json docs/install.md)
readme_json=$(python3 tests/docs/examples.py --json README.md)
block() { # STEP: the text of docs/install.md's ```sh dist step=STEP block
  python3 -c 'import json, sys
found = [b["text"] for b in json.loads(sys.argv[1]) if b["mode"] == "dist" and b["options"].get("step") == sys.argv[2]]
if len(found) != 1: sys.exit(f"docs/install.md: {len(found)} sh dist blocks of step={sys.argv[2]}")
print(found[0])' "$blocks_json" "$1"
}
ran_steps=()
# STEP [SECONDS] [DIR]: runs the block as the page shows it, in DIR (/dist, where the downloaded
# files are, by default) after $step_env (exports the registries' TLS needs), output to the log and
# $step_out.
docs_step() {
  local text; text=$(block "$1")
  ran_steps+=("$1")
  echo "   docs/install.md step=$1:"
  printf '%s\n' "$text" | sed 's/^/     # /'
  step_out=$(in_root "${2:-300}" "cd ${3:-/dist}; ${step_env:-}$text" 2>&1) || { printf '%s\n' "$step_out" | sed 's/^/     | /'; fail "step $1 exited non-zero"; }
  printf '%s\n' "$step_out" | sed 's/^/     | /'
}
cli() { in_root 20 "redis-cli -p $port $*"; }

# --- the root -------------------------------------------------------------------------------------
phase "root (debootstrap cache, fresh extraction)"
if [ ! -f "$base" ]; then
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  rm -rf "$cache_dir/base-build"; mkdir -p "$cache_dir"
  echo "   debootstrap --variant=minbase trixie (cached in $base afterwards)"
  timeout 1800 debootstrap --variant=minbase trixie "$cache_dir/base-build" "$mirror" >"$cache_dir/debootstrap.log" 2>&1 ||
    { tail -20 "$cache_dir/debootstrap.log" >&2; fail "debootstrap (log: $cache_dir/debootstrap.log)"; }
  tar -C "$cache_dir/base-build" --numeric-owner -czf "$base.part" . && mv "$base.part" "$base"
  rm -rf "$cache_dir/base-build"
fi
wipe_root
mkdir -p "$root"
tar -C "$root" -xzf "$base"
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\n# dist-test: no service starts in a chroot\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
# A test's answer to apt's "Do you want to continue?": the docs' apt lines run unchanged.
printf 'APT::Get::Assume-Yes "true";\nDpkg::Use-Pty "false";\n' >"$root/etc/apt/apt.conf.d/90dist-test"
# The host's own CA certificates (a TLS-inspecting proxy's): the root trusts what the host trusts,
# so pip and npm reach their registries from behind it. Nothing else of the host's is copied.
host_cas=$(find /usr/local/share/ca-certificates -name '*.crt' 2>/dev/null | head -n 20)
if [ -n "$host_cas" ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  # shellcheck disable=SC2086 # a list of paths without spaces
  cp $host_cas "$root/usr/local/share/ca-certificates/"
fi
mkdir -p "$root/dist"
find "$dist" -maxdepth 1 -type f -exec cp {} "$root/dist/" \;
for d in go-proxy crates maven; do [ -d "$dist/$d" ] && cp -r "$dist/$d" "$root/dist/"; done
if [ -e "$root/usr/bin/cargo" ] || [ -e "$root/dist/Cargo.toml" ]; then fail "the root has a toolchain or a source tree"; fi
ok "trixie $(cat "$root/etc/debian_version"), /proc mounted, dist/ copied ($(find "$root/dist" -type f | wc -l) files), no cargo, no source"

phase "checksums"
docs_step checksums 60
[[ $step_out == *": OK"* && $step_out != *FAILED* ]] || fail "sha256sum -c"
ok "every file of SHA256SUMS matches"

# --- 1. the module's package ----------------------------------------------------------------------
phase "redis-server and the module's .deb"
in_root 600 "apt-get update -qq && apt-get install -y -qq redis-server >/dev/null 2>&1 && redis-server --version"
if [ "$port" != 6379 ]; then
  echo "   DIST_TEST_PORT=$port: the root's /etc/redis/redis.conf says port $port"
  sed -i "s/^port 6379$/port $port/" "$root/etc/redis/redis.conf"
fi
docs_step deb-install 600
[ "$(stat -c %a "$root/usr/lib/redis/modules/dlock.so")" = 755 ] || fail "dlock.so is not 0755"
[ -f "$root/etc/redis/modules/dlock.conf" ] || fail "no /etc/redis/modules/dlock.conf"
if grep -Ev '^(#|$)' "$root/etc/redis/modules/dlock.conf"; then fail "/etc/redis/modules/dlock.conf has a line not commented out"; fi
ok "/usr/lib/redis/modules/dlock.so 0755, /etc/redis/modules/dlock.conf (a reference: every line commented out)"
cp -p "$root/etc/redis/redis.conf" "$root/root/redis.conf.orig"
docs_step deb-enable 60
redis_up "$port" 20 || { tail -20 "$root/var/log/redis/redis-server.log"; fail "Redis does not answer on $port 20 s after the start"; }
docs_step deb-check 30
grep -q dlock <<<"$step_out" || fail "MODULE LIST has no dlock"
version=$(sed -n '/^\[workspace.package\]$/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
IFS=. read -r major minor patch <<<"$version"
modver=$((major * 10000 + minor * 100 + patch))
grep -qx "$modver" <<<"$step_out" || fail "MODULE LIST shows no version $modver"
ok "MODULE LIST: dlock $modver"
token=$(cli DLOCK.ACQUIRE dist-test:lock alice 30000)
[[ $token =~ ^[0-9]+$ ]] || fail "DLOCK.ACQUIRE answered '$token'"
status=$(cli DLOCK.STATUS dist-test:lock)
if ! grep -qx alice <<<"$status" || ! grep -qx "$token" <<<"$status"; then fail "DLOCK.STATUS: $status"; fi
[ "$(cli DLOCK.ACQUIRE dist-test:lock bob 30000)" = "" ] || fail "bob got alice's lock"
[ "$(cli DLOCK.RELEASE dist-test:lock alice)" = 1 ] || fail "release"
ok "redis-cli: DLOCK.ACQUIRE token $token, DLOCK.STATUS owner alice, a second owner refused, released"

# --- 2. the CLI's package -------------------------------------------------------------------------
phase "the CLI's .deb, dlock run"
docs_step cli-deb 300
grep -Eq '^holding nightly-report, token [0-9]+$' <<<"$step_out" || fail "dlock run printed no token"
in_root 10 "dlock --version" | grep -qx "dlock $version" || fail "dlock --version is not $version"
ok "dlock run held the lock (DLOCK_TOKEN printed), dlock --version: $version"

# --- 3. the clients from their artifacts, the README's examples ---------------------------------
phase "clients: the README's Python and Node examples"
# README's examples name 7001-7005: 7001 is the packaged server ($port); 7002-7005 are four more
# servers started by hand in the root, on free ports, each loading the packaged module.
extra_ports=$(python3 -c 'import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')
start_extras() {
  local p
  for p in $extra_ports; do
    in_root 20 "runuser -u redis -- redis-server --port $p --bind 127.0.0.1 --daemonize yes --save '' --appendonly no --dir /tmp --pidfile /tmp/redis-$p.pid --logfile /tmp/redis-$p.log --loadmodule /usr/lib/redis/modules/dlock.so"
    redis_up "$p" 20 || fail "the extra server on $p does not answer"
  done
}
stop_extras() {
  local p
  for p in $extra_ports; do in_root 20 "redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true"; redis_down "$p" 20 || fail "server $p does not stop"; done
}
# readme_example LANG: README.md's `LANG run` block with its ports mapped, and its `output` block.
readme_example() {
  # shellcheck disable=SC2086 # the ports are words
  python3 - "$readme_json" "$1" "$port" $extra_ports <<'PY'
import json, re, sys
blocks, lang, ports = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
found = [b for b in blocks if b["mode"] == "run" and b["lang"] == lang]
if not found: sys.exit(f"README.md has no {lang} run block")
text = found[0]["text"]
for documented, actual in zip(("7001", "7002", "7003", "7004", "7005"), ports):
    text = re.sub(rf"(?<![\w.]){documented}(?!\w)", actual, text)
print(json.dumps({"text": text, "output": found[0]["output"] or ""}))
PY
}
compare_output() { # WHAT EXPECTED ACTUAL
  python3 -c 'import sys; sys.path.insert(0, "tests/docs")
from examples import differences
d = differences(sys.argv[2], sys.argv[3])
if d: sys.exit(f"{sys.argv[1]}: the output differs from README.md\n{d}")' "$@"
}
# LABEL LANG DIR FILE COMMAND: README.md's LANG example written to DIR/FILE in the root, run there
# by COMMAND against the packaged servers (7001 -> $port, the others -> $extra_ports), its output
# compared with the page's.
readme_runs() {
  local example out
  example=$(readme_example "$2")
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])["text"])' "$example" >"$root$3/$4"
  echo "   README.md's $1 example (ports mapped: 7001 -> $port, the others -> $extra_ports):"
  out=$(in_root 60 "cd $3 && $5" 2>&1) || { echo "$out"; fail "the $1 example"; }
  printf '%s\n' "$out" | sed 's/^/     | /'
  compare_output "$1" "$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["output"])' "$example")" "$out"
}
start_extras
# The registries' TLS: the system store (with the host's CAs, above) for pip and npm.
in_root 300 "apt-get install -y -qq ca-certificates >/dev/null 2>&1 && update-ca-certificates >/dev/null 2>&1"
tls_env="PIP_CERT=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"
wheel=$(find "$dist" -maxdepth 1 -name 'dlock_client-*-py3-none-any.whl' -printf '%f\n' | head -n 1)
if [ -n "$wheel" ]; then
  in_root 600 "apt-get install -y -qq python3-venv >/dev/null 2>&1; python3 --version"
  in_root 60 "mkdir -p /app-py && cp /dist/$wheel /app-py/"
  step_env="export $tls_env PIP_DISABLE_PIP_VERSION_CHECK=1; "
  docs_step python-wheel 600 /app-py
  step_env=
  readme_runs Python python /app-py readme.py ".venv/bin/python readme.py"
  ok "pip install $wheel into a fresh venv; README's Python example printed what README.md shows"
else
  echo "   SKIPPED: no wheel in dist/ (scripts/dist-clients.sh makes it)"; skipped+=(python); ran_steps+=(python-wheel)
fi
npm_tgz=$(find "$dist" -maxdepth 1 -name 'dlock-[0-9]*.tgz' -printf '%f\n' | head -n 1)
if [ -n "$npm_tgz" ]; then
  in_root 900 "apt-get install -y -qq nodejs npm >/dev/null 2>&1; echo node \$(node --version), npm \$(npm --version)"
  in_root 60 "mkdir -p /app-node && cd /app-node && npm init -y >/dev/null && cp /dist/$npm_tgz ."
  step_env="export $tls_env npm_config_audit=false npm_config_fund=false; "
  docs_step npm-tarball 600 /app-node
  step_env=
  readme_runs Node js /app-node readme.mjs "node readme.mjs"
  ok "npm install $npm_tgz into a fresh project; README's Node example printed what README.md shows"
else
  echo "   SKIPPED: no npm tarball in dist/ (scripts/dist-clients.sh makes it)"; skipped+=(node); ran_steps+=(npm-tarball)
fi

# --- 4. the Go and Java clients, on the host ------------------------------------------------------
phase "clients on the host (scripts/dist-check-clients.sh)"
if [ -x scripts/dist-check-clients.sh ]; then
  scripts/dist-check-clients.sh "redis://127.0.0.1:$port" "$dist" ||
    fail "scripts/dist-check-clients.sh"
  ok "scripts/dist-check-clients.sh against redis://127.0.0.1:$port"
else
  echo "   SKIPPED: no scripts/dist-check-clients.sh (the Go and Java artifacts are not checked)"; skipped+=(go-java)
fi
stop_extras

# --- 5. CONFIG REWRITE, remove, purge ------------------------------------------------------------
phase "CONFIG REWRITE, remove, purge"
service_stop() { in_root 40 "timeout 30 service redis-server stop >/dev/null 2>&1"; redis_down "$port" 20 || fail "Redis did not stop"; }
service_start() { # start the server as the page says; whether it answers
  in_root 40 "timeout 30 service redis-server start >/dev/null 2>&1" || true
  redis_up "$port" 15
}
# The loadmodule line of deb-enable: CONFIG REWRITE rewrites it, and a changed option, in place,
# and the server starts from the rewritten file with the module and the option, no edit by hand.
conf=$root/etc/redis/redis.conf
modline='^loadmodule "?/usr/lib/redis/modules/dlock\.so"?$'
cli CONFIG SET dlock.max-waiters 5000 >/dev/null
[ "$(cli CONFIG REWRITE)" = OK ] || fail "CONFIG REWRITE"
echo "   CONFIG SET dlock.max-waiters 5000; CONFIG REWRITE; redis.conf's diff (its lines of dlock, loadmodule, include, CONFIG REWRITE):"
rewrite_diff=$(diff "$root/root/redis.conf.orig" "$conf" || true)
grep -Ei '^[<>].*(dlock|loadmodule|include|CONFIG REWRITE)' <<<"$rewrite_diff" | sed 's/^/     /'
echo "     (and $(grep -Eivc '^[<>].*(dlock|loadmodule|include|CONFIG REWRITE)|^[0-9,]+[acd][0-9,]+$|^---$' <<<"$rewrite_diff") other changed lines: quoting, trailing spaces, defaults spelled out)"
echo "   redis.conf's lines of the module now:"
grep -nEi '^[^#]*(loadmodule|dlock\.|include)|Generated by CONFIG REWRITE' "$conf" | sed 's/^/     /'
[ "$(grep -Ec "$modline" "$conf")" = 1 ] || fail "redis.conf has not exactly one loadmodule line of dlock.so"
[ "$(grep -Ec '^loadmodule' "$conf")" = 1 ] || fail "redis.conf loads more than one module"
[ "$(grep -Ec '^dlock\.' "$conf")" = 1 ] || fail "redis.conf has not exactly one dlock.* line"
grep -qx 'dlock.max-waiters 5000' "$conf" || fail "CONFIG REWRITE wrote no dlock.max-waiters 5000 line"
if grep -Eq '^include' "$conf"; then fail "redis.conf has an include line"; fi
mod_at=$(grep -En "$modline" "$conf" | cut -d: -f1)
opt_at=$(grep -n '^dlock.max-waiters' "$conf" | cut -d: -f1)
[ "$mod_at" -lt "$opt_at" ] || fail "the dlock.max-waiters line is before the loadmodule line"
cp -p "$conf" "$root/root/redis.conf.rewritten1"
# Redis (8.0) ends a file it rewrites twice with one more empty line, then no more: the second
# rewrite may differ from the first by empty lines only; from then on the file is a fixed point.
[ "$(cli CONFIG REWRITE)" = OK ] || fail "the second CONFIG REWRITE"
second_diff=$(diff "$root/root/redis.conf.rewritten1" "$conf" || true)
diff -B -q "$root/root/redis.conf.rewritten1" "$conf" >/dev/null || { printf '%s\n' "$second_diff"; fail "a second CONFIG REWRITE changed redis.conf"; }
echo "   a second CONFIG REWRITE: $([ -z "$second_diff" ] && echo "redis.conf unchanged" || echo "$(grep -c '^> $' <<<"$second_diff") empty line(s) more, nothing else")"
cp -p "$conf" "$root/root/redis.conf.rewritten"
ok "CONFIG REWRITE: one loadmodule line (line $mod_at, the one deb-enable appended, in place), dlock.max-waiters 5000 after it (line $opt_at); a second rewrite changes no line of text"
service_stop
service_start || { tail -5 "$root/var/log/redis/redis-server.log" | sed 's/^/     log: /'; fail "Redis does not start from the rewritten redis.conf"; }
cli MODULE LIST | grep -q dlock || fail "no module after the restart"
[ "$(cli CONFIG GET dlock.max-waiters | tail -n 1)" = 5000 ] || fail "dlock.max-waiters lost in the restart"
[ "$(cli CONFIG REWRITE)" = OK ] || fail "CONFIG REWRITE after the restart"
cmp -s "$conf" "$root/root/redis.conf.rewritten" || { diff "$root/root/redis.conf.rewritten" "$conf"; fail "CONFIG REWRITE after the restart changed redis.conf"; }
ok "restarted from the rewritten redis.conf, no edit by hand: the module loaded, dlock.max-waiters 5000; CONFIG REWRITE again: redis.conf byte for byte the same"
service_stop
# A per-instance file (Debian's redis-server@NAME reads /etc/redis/redis-NAME.conf) loading the
# module, quoted: remove must comment it out as well, and a reinstall restore it.
extra="$root/etc/redis/redis-extra.conf"
echo "loadmodule '/usr/lib/redis/modules/dlock.so'" >"$extra"
docs_step remove 300
grep -qx "# disabled by redis-dlock removal: loadmodule '/usr/lib/redis/modules/dlock.so'" "$extra" ||
  fail "remove left the per-instance file's quoted loadmodule line active: $(cat "$extra")"
[ ! -e "$root/usr/lib/redis/modules/dlock.so" ] || fail "remove left dlock.so"
[ -f "$root/etc/redis/modules/dlock.conf" ] || fail "remove took the conffile"
grep -q 'commented out' <<<"$step_out" || fail "the postrm said nothing of redis.conf"
echo "   left after remove: $(cd "$root" && find etc/redis/modules usr/lib/redis 2>/dev/null | tr '\n' ' ')"
echo "   dpkg -l: $(in_root 10 "dpkg -l redis-dlock | tail -n 1" | awk '{print $1, $2, $3}')"
echo "   redis.conf now (the package's lines):"; grep -n 'redis-dlock' "$conf" | sed 's/^/     /'
marked=$(sed -n 's/^# disabled by redis-dlock removal: //p' "$conf")
[ "$marked" = "$(grep -E "$modline|^dlock\." "$root/root/redis.conf.rewritten")" ] ||
  fail "the postrm did not mark exactly the loadmodule and dlock.* lines: $marked"
if grep -Eq '^[^#]*(dlock|loadmodule)' "$conf"; then fail "redis.conf still loads the module or sets a dlock.* option"; fi
# The RDB Redis saved at its last stop holds the module's data (this run's lock keys are gone, but
# the fencing counter is an aux field of every RDB once a token was issued): a server without the
# module refuses it. docs/install.md says so; here the file holds nothing but the test's data.
if service_start; then
  fail "Redis started after remove with an RDB the module wrote: docs/install.md says it does not"
fi
grep -E "module data I can't load|no matching module" "$root/var/log/redis/redis-server.log" | tail -n 1 | sed 's/^/     log: /'
ok "Redis refuses the RDB the module wrote (as docs/install.md warns); moving this test's dump.rdb aside"
mv "$root/var/lib/redis/dump.rdb" "$root/var/lib/redis/dump.rdb.with-dlock"
if service_start; then
  modules=$(cli MODULE LIST)
  if grep -q dlock <<<"$modules"; then fail "the module is loaded after remove"; fi
  ok "Redis starts after remove (redis.conf's lines commented out); the module is not loaded (MODULE LIST: $(tr '\n' ' ' <<<"$modules"))"
else
  tail -5 "$root/var/log/redis/redis-server.log" | sed 's/^/     log: /'; fail "Redis does not start after remove"
fi
service_stop
docs_step purge 300
[ ! -e "$root/etc/redis/modules/dlock.conf" ] || fail "purge left the conffile"
in_root 10 "dpkg -s redis-dlock >/dev/null 2>&1" && fail "dpkg still knows redis-dlock after purge"
echo "   left after purge: $(cd "$root" && find etc/redis/modules usr/lib/redis/modules usr/share/doc/redis-dlock 2>/dev/null | tr '\n' ' ')"
if service_start; then
  ok "Redis starts after purge (MODULE LIST: $(cli MODULE LIST | tr '\n' ' ' | sed 's/ *$//;s/^$/empty/'))"
else
  tail -5 "$root/var/log/redis/redis-server.log" | sed 's/^/     log: /'; fail "Redis does not start after purge"
fi
service_stop
echo "   install again: the postinst restores the lines the postrm marked"
in_root 300 "apt-get install -y -qq ./redis-dlock_*_amd64.deb 2>&1 | grep redis-dlock: || true" | sed 's/^/     | /'
service_start || fail "Redis does not start after reinstalling"
cli MODULE LIST | grep -q dlock || fail "the module is not loaded after reinstalling"
[ "$(cli CONFIG GET dlock.max-waiters | tail -n 1)" = 5000 ] || fail "the rewritten dlock.max-waiters was not restored"
grep -qx "loadmodule '/usr/lib/redis/modules/dlock.so'" "$extra" || fail "the per-instance file's line was not restored"
ok "reinstalled: Redis starts with the module and the rewritten dlock.max-waiters 5000 (the lines the postrm marked, restored; the per-instance file's too)"
service_stop
# Installing again over an enabled configuration adds no second loadmodule line, and says nothing
# of enabling (an operator who obeyed "not enabled yet" would load the module twice).
again=$(in_root 300 "apt-get install -y -qq --reinstall ./redis-dlock_*_amd64.deb 2>&1 | grep redis-dlock: || true")
if grep -q 'not enabled' <<<"$again"; then fail "a reinstall over an enabled redis.conf says 'not enabled yet'"; fi
[ "$(grep -Ec "^[[:space:]]*loadmodule .*dlock\.so" "$conf")" = 1 ] || fail "a reinstall changed the count of loadmodule lines"
ok "reinstalled over an enabled redis.conf: one loadmodule line, nothing said of enabling"
rm -f "$extra"
in_root 300 "apt-get purge -y -qq redis-dlock >/dev/null 2>&1"

# --- 6. the tarballs -------------------------------------------------------------------------------
phase "the tarballs (module, CLI)"
docs_step module-tarball 60
service_start || { tail -5 "$root/var/log/redis/redis-server.log"; fail "Redis does not start with the tarball's module"; }
cli MODULE LIST | grep -qx "$modver" || fail "MODULE LIST after the tarball install"
ok "the tarball's dlock.so in /usr/local/lib/redis/modules, loaded by the loadmodule line: MODULE LIST dlock $modver"
docs_step cli-tarball 60
grep -qx "dlock $version" <<<"$step_out" || fail "the tarball's dlock --version"
ok "the tarball's dlock: $version"
service_stop

phase ""
for s in $(python3 -c 'import json, sys
print(" ".join(b["options"].get("step", "?") for b in json.loads(sys.argv[1]) if b["mode"] == "dist"))' "$blocks_json"); do
  [[ " ${ran_steps[*]} " == *" $s "* ]] || fail "docs/install.md's step=$s was not run"
done
echo "== dist-test: ran every sh dist block of docs/install.md (${ran_steps[*]})"
echo "== dist-test: total $(($(date +%s) - start)) s"
if [ ${#skipped[@]} -gt 0 ]; then
  if [ "${DIST_TEST_PARTIAL:-0}" = 1 ]; then
    echo "== dist-test: PASSED IN PART: SKIPPED ${skipped[*]} (DIST_TEST_PARTIAL=1)"
  else
    echo "== dist-test: FAILED: SKIPPED ${skipped[*]} (no client artifacts; DIST_TEST_PARTIAL=1 accepts that)" >&2
    exit 1
  fi
else
  echo "== dist-test: PASSED"
fi
