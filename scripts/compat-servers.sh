#!/usr/bin/env bash
# Builds the server binaries `make compat` runs the integration tests against, from Debian's
# source packages (fetched from deb.debian.org, checked against the sha256 Debian publishes),
# into .compat/ (git-ignored). Nothing here is committed but this script.
#
#   scripts/compat-servers.sh            # builds every server below that is missing
#   DLOCK_COMPAT_DIR=/tmp/x scripts/...  # elsewhere
#
# Prints the DLOCK_REDIS_SERVERS line to use with `make compat`.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${DLOCK_COMPAT_DIR:-$PWD/.compat}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dest"

# name | pool path | sha256 (from Debian's Sources index) | dir in tarball | binary
servers=(
  "redis-8.0.2|pool/main/r/redis/redis_8.0.2.orig.tar.gz|caf3c0069f06fc84c5153bd2a348b204c578de80490c73857bee01d9b5d7401f|redis-8.0.2|src/redis-server"
  "valkey-8.1.1|pool/main/v/valkey/valkey_8.1.1+dfsg1.orig.tar.xz|d9bbd82eecb82f359e649a0007ad3dc1b47cc15afa626348ca86b73c4ae2c7ee|valkey-8.1.1|src/valkey-server"
)

built=()
for row in "${servers[@]}"; do
  IFS='|' read -r name path sum dir binary <<<"$row"
  out="$dest/$name/$binary"
  if [ ! -x "$out" ]; then
    echo "== $name: fetching $mirror/$path" >&2
    tarball="$dest/$(basename "$path")"
    curl -fsSL -o "$tarball" "$mirror/$path"
    echo "$sum  $tarball" | sha256sum -c --quiet -
    rm -rf "${dest:?}/$name" "$dest/$dir"
    tar -xf "$tarball" -C "$dest"
    [ "$dir" = "$name" ] || mv "$dest/$dir" "$dest/$name"
    echo "== $name: building (a few minutes)" >&2
    make -C "$dest/$name" -j"$(nproc)" BUILD_TLS=no >"$dest/$name.build.log" 2>&1 \
      || { echo "$name: build failed, see $dest/$name.build.log" >&2; exit 1; }
    rm -f "$tarball"
  fi
  built+=("$out")
done
echo "DLOCK_REDIS_SERVERS=\"$(command -v redis-server) ${built[*]}\""
