#!/usr/bin/env bash
# The native release artifacts into DIST_DIR (default dist/), from the release builds in
# target/release (scripts/dist.sh builds them first): the module's tarball and Debian package,
# the CLI's tarball and Debian package; lintian on both packages (installed when missing). The
# templates, maintainer scripts and texts are in packaging/ (docs/releasing.md).
# Usage: scripts/dist-native.sh [DIST_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dist=$(realpath -m "${1:-dist}")
mkdir -p "$dist"

version=$(sed -n '/^\[workspace.package\]$/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "dist-native: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
IFS=. read -r major minor patch <<<"$version"
modver=$((major * 10000 + minor * 100 + patch))
maintainer=${DLOCK_MAINTAINER:-"dlock authors <dlock@example.org>"}
# Reproducible dates: the last commit's.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH=$epoch
changelog_date=$(LC_ALL=C date -u -R -d "@$epoch")

module=target/release/libdlock.so
cli=target/release/dlock
for f in "$module" "$cli"; do
  [ -f "$f" ] || { echo "dist-native: $f is missing: cargo build --release first" >&2; exit 1; }
done

missing=""
command -v dpkg-deb >/dev/null || missing="$missing dpkg"
command -v dpkg-shlibdeps >/dev/null || missing="$missing dpkg-dev"
command -v lintian >/dev/null || missing="$missing lintian"
command -v objdump >/dev/null || missing="$missing binutils"
if [ -n "$missing" ]; then
  echo "installing:$missing"
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  # shellcheck disable=SC2086 # $missing and $SUDO are lists of words
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The binaries as shipped: stripped as Debian's dh_strip does (the release profile keeps line
# tables for backtraces; the debug info is most of the size). One copy serves tarball and .deb.
strip_to() { install -m 0755 "$1" "$2"; strip --strip-unneeded --remove-section=.comment --remove-section=.note "$2"; }
strip_to "$module" "$work/dlock.so"
strip_to "$cli" "$work/dlock"

# The newest glibc symbol version each binary needs: the glibc minimum the docs state.
glibc_of() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1; }
glibc_module=$(glibc_of "$work/dlock.so")
glibc_cli=$(glibc_of "$work/dlock")
glibc=$(printf '%s\n%s\n' "$glibc_module" "$glibc_cli" | sort -V | tail -n 1)
echo "glibc: module needs >= $glibc_module, CLI >= $glibc_cli"

# Depends from the shared libraries each binary links (libc6, libgcc-s1), as dpkg-shlibdeps
# computes them for any Debian package; its libc6 version must be the objdump figure.
shlibs_of() {
  local dir
  dir=$(mktemp -d "$work/shlibs.XXXX")
  mkdir -p "$dir/debian"
  printf 'Source: dlock\n\nPackage: dlock\nArchitecture: amd64\n' >"$dir/debian/control"
  (cd "$dir" && dpkg-shlibdeps -O "$1" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}
shlibs_module=$(shlibs_of "$work/dlock.so")
shlibs_cli=$(shlibs_of "$work/dlock")
for s in "$shlibs_module" "$shlibs_cli"; do
  [[ $s == *"libc6 (>= $glibc_module)"* || $s == *"libc6 (>= $glibc_cli)"* ]] ||
    { echo "dist-native: dpkg-shlibdeps says '$s', objdump says glibc $glibc" >&2; exit 1; }
done
echo "Depends: module: $shlibs_module; CLI: $shlibs_cli"

subst() { # FILE -> stdout, the @WORDS@ replaced
  sed -e "s|@VERSION@|$version|g" -e "s|@MODVER@|$modver|g" -e "s|@GLIBC@|$glibc|g" \
    -e "s|@MAINTAINER@|$maintainer|g" -e "s|@DATE@|$changelog_date|g" "$1"
}

tarball() { # NAME DIR: DIR/NAME/ -> dist/NAME-x86_64-linux-gnu.tar.gz, reproducibly
  tar -C "$2" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -cf - "$1" | gzip -9n >"$dist/$1-x86_64-linux-gnu.tar.gz"
  echo "built: dist/$1-x86_64-linux-gnu.tar.gz"
}

# The module's tarball: dlock-module-VERSION/{dlock.so,dlock.conf,LICENSE,INSTALL}.
t=$work/tar-module/dlock-module-$version
mkdir -p "$t"
install -m 0755 "$work/dlock.so" "$t/dlock.so"
install -m 0644 packaging/dlock.conf "$t/dlock.conf"
install -m 0644 LICENSE "$t/LICENSE"
subst packaging/module/INSTALL >"$t/INSTALL"; chmod 0644 "$t/INSTALL"
tarball "dlock-module-$version" "$work/tar-module"

# The CLI's tarball: dlock-cli-VERSION/{dlock,LICENSE,README}.
t=$work/tar-cli/dlock-cli-$version
mkdir -p "$t"
install -m 0755 "$work/dlock" "$t/dlock"
install -m 0644 LICENSE "$t/LICENSE"
subst packaging/cli/README >"$t/README"; chmod 0644 "$t/README"
tarball "dlock-cli-$version" "$work/tar-cli"

# A Debian package from a staged tree: PACKAGE SHLIBS (the tree in $work/deb-PACKAGE is filled).
deb() {
  local package=$1 shlibs=$2 tree=$work/deb-$1 doc out
  doc=$tree/usr/share/doc/$package
  mkdir -p "$doc" "$tree/DEBIAN"
  install -m 0644 packaging/deb/copyright "$doc/copyright"
  subst packaging/deb/changelog.in | sed "s|@PACKAGE@|$package|" | gzip -9n >"$doc/changelog.Debian.gz"
  if [ -f CHANGELOG.md ]; then gzip -9n <CHANGELOG.md >"$doc/changelog.gz"; fi
  chmod 0644 "$doc"/*
  if [ -f "packaging/deb/$package/lintian-overrides" ]; then
    mkdir -p "$tree/usr/share/lintian/overrides"
    install -m 0644 "packaging/deb/$package/lintian-overrides" "$tree/usr/share/lintian/overrides/$package"
  fi
  local size
  size=$(du -sk --exclude=DEBIAN "$tree" | cut -f1)
  subst "packaging/deb/$package/control.in" | sed -e "s|@SIZE@|$size|" -e "s|@SHLIBS@|$shlibs|" \
    >"$tree/DEBIAN/control"
  for f in conffiles postinst postrm; do
    [ -f "packaging/deb/$package/$f" ] || continue
    if [ "$f" = conffiles ]; then mode=0644; else mode=0755; fi
    install -m "$mode" "packaging/deb/$package/$f" "$tree/DEBIAN/$f"
  done
  (cd "$tree" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$tree/DEBIAN/md5sums"
  chmod 0644 "$tree/DEBIAN/md5sums"
  find "$tree" -type d -exec chmod 0755 {} +
  find "$tree" -exec touch -h -d "@$epoch" {} +
  out=$dist/${package}_${version}-1_amd64.deb
  dpkg-deb --root-owner-group -Zxz --build "$tree" "$out" >/dev/null
  echo "built: dist/$(basename "$out")"
}

# redis-dlock: the module, its snippet (a conffile), README.Debian.
tree=$work/deb-redis-dlock
install -D -m 0755 "$work/dlock.so" "$tree/usr/lib/redis/modules/dlock.so"
install -D -m 0644 packaging/dlock.conf "$tree/etc/redis/modules/dlock.conf"
install -D -m 0644 packaging/deb/redis-dlock/README.Debian "$tree/usr/share/doc/redis-dlock/README.Debian"
deb redis-dlock "$shlibs_module"

# dlock: the CLI.
tree=$work/deb-dlock
install -D -m 0755 "$work/dlock" "$tree/usr/bin/dlock"
deb dlock "$shlibs_cli"

# lintian: any error or warning fails the build (overrides, each argued: packaging/deb/*/lintian-overrides).
echo "lintian:"
debs=("$dist/redis-dlock_${version}-1_amd64.deb" "$dist/dlock_${version}-1_amd64.deb")
lintian_out=$(lintian --fail-on error,warning --display-info "${debs[@]}" 2>&1 |
  grep -v 'running with root privileges' || true)
# pipefail: the status is lintian's (grep's "nothing left" is the || true's).
lintian --fail-on error,warning "${debs[@]}" >/dev/null 2>&1 ||
  { printf '%s\n' "$lintian_out" >&2; echo "dist-native: lintian failed" >&2; exit 1; }
printf '%s\n' "$lintian_out" | sed '/^$/d; s/^/  /'
echo "  clean: no error, warning or info; overridden (each argued in packaging/deb/*/lintian-overrides):"
lintian --show-overrides "${debs[@]}" 2>/dev/null | sed -n 's/^O: /  /p'
