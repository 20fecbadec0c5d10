#!/usr/bin/env bash
# make dist's client part (scripts/dist.sh runs it): the packages of every client, built from this
# tree into DIST_DIR and each checked as a user would get it (docs/install.md, "The clients"):
#
#   DIST_DIR/dlock_client-VERSION-py3-none-any.whl, dlock_client-VERSION.tar.gz   (python -m build)
#   DIST_DIR/dlock-VERSION.tgz                       (npm pack: dist/ prebuilt, no build at install)
#   DIST_DIR/crates/NAME-VERSION.crate               (cargo package: every crate not publish = false)
#   DIST_DIR/goproxy/dlock.dev/dlock/@v/{list,vVERSION.info,.mod,.zip}   (a file-based Go proxy)
#   DIST_DIR/dlock-VERSION.jar, -sources.jar, .pom, and DIST_DIR/maven/ (a Maven repository)
#
# Usage: scripts/dist-clients.sh DIST_DIR. DIST_CLIENTS="python node" builds only those (of
# python node rust go java). cargo package refuses uncommitted changes to a crate's files, as a
# release should; DIST_ALLOW_DIRTY=1 packages them anyway (the .crate then says "dirty").
# Scratch space: target/dist-clients; the build venv: target/dist-venv. A line per artifact with
# its time. scripts/dist-check-clients.sh runs the docs' examples against these artifacts.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: scripts/dist-clients.sh DIST_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
dist=$(cd "$1" && pwd)
version=$(sed -n '/^\[workspace.package\]$/{n;s/^version = "\(.*\)"$/\1/p}' "$root/Cargo.toml")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "dist-clients: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
work="$root/target/dist-clients"
rm -rf "$work"
mkdir -p "$work"
only=" ${DIST_CLIENTS:-python node rust go java} "

say() { echo "dist-clients: $*"; }
fail() { echo "dist-clients: $*" >&2; exit 1; }
# The top-level LICENSE, copied into each package that carries one, when the tree has it.
license="$root/LICENSE"
[[ -f $license ]] || say "warning: no LICENSE at the top level: the packages go without one"

# ---------------------------------------------------------------------------------------------
python_artifacts() {
  local venv="$root/target/dist-venv" stage="$work/python" check="$work/python-check"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/python/requirements-dist.txt"
  # Built from a copy: the package's files only (no venv, no caches), with the LICENSE beside
  # pyproject.toml, where setuptools takes it into both the sdist and the wheel.
  mkdir -p "$stage"
  cp "$root/python/pyproject.toml" "$root/python/README.md" "$stage/"
  cp -r "$root/python/src" "$stage/"
  find "$stage" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
  [[ -f $license ]] && cp "$license" "$stage/LICENSE"
  "$venv/bin/python" -m build --outdir "$dist" "$stage" >"$work/python-build.log" 2>&1 \
    || { cat "$work/python-build.log" >&2; fail "python -m build failed"; }
  local wheel="$dist/dlock_client-$version-py3-none-any.whl" sdist="$dist/dlock_client-$version.tar.gz"
  [[ -f $wheel && -f $sdist ]] || fail "python -m build made no $(basename "$wheel") / $(basename "$sdist")"
  local need=(src/dlock/py.typed src/dlock/__init__.py README.md pyproject.toml PKG-INFO)
  [[ -f $license ]] && need+=(LICENSE)
  local listing; listing=$(tar tzf "$sdist")
  for f in "${need[@]}"; do
    grep -qx "dlock_client-$version/$f" <<<"$listing" || fail "the sdist lacks $f"
  done
  listing=$(python3 -m zipfile -l "$wheel")
  grep -q "dlock/py.typed" <<<"$listing" || fail "the wheel lacks dlock/py.typed"
  if [[ -f $license ]]; then grep -q "dist-info/licenses/LICENSE" <<<"$listing" || fail "the wheel lacks LICENSE"; fi
  # Installs into a fresh venv, and imports (redis, its one dependency, from the index).
  python3 -m venv "$check"
  "$check/bin/pip" install -q --disable-pip-version-check "$wheel"
  local got
  got=$(cd "$check" && bin/python -c 'import dlock, dlock.asyncio; print(dlock.__version__)')
  [[ $got == "$version" ]] || fail "the wheel's dlock.__version__ is $got, not $version"
}

# ---------------------------------------------------------------------------------------------
node_artifacts() {
  local stage="$work/node" check="$work/node-check"
  # dist/ built here, once; the tarball carries it, so an install compiles nothing.
  (cd "$root/node"
   [[ -x node_modules/.bin/tsc ]] || npm ci --include=dev --ignore-scripts --no-audit --no-fund >"$work/node-ci.log" 2>&1 \
     || { cat "$work/node-ci.log" >&2; exit 1; }
   rm -rf dist
   npm run -s build) || fail "the Node build failed"
  # Packed from a copy (package.json's "files": dist and the README, with the LICENSE) with
  # --ignore-scripts: `prepare` (which builds a clone's install) has nothing left to do.
  mkdir -p "$stage"
  cp "$root/node/package.json" "$root/node/README.md" "$stage/"
  cp -r "$root/node/dist" "$stage/"
  # The packed package.json without `prepare`: its script is not in the tarball, and npm would ask
  # every installer to approve running it.
  (cd "$stage" && npm pkg delete scripts.prepare)
  [[ -f $license ]] && cp "$license" "$stage/LICENSE"
  local tgz="$dist/dlock-$version.tgz"
  (cd "$stage" && npm pack -q --ignore-scripts --pack-destination "$dist" >/dev/null)
  [[ -f $tgz ]] || fail "npm pack made no $(basename "$tgz")"
  local listing; listing=$(tar tzf "$tgz")
  for f in package.json README.md dist/esm/index.js dist/esm/index.d.ts dist/cjs/index.js dist/cjs/index.d.ts dist/cjs/package.json; do
    grep -qx "package/$f" <<<"$listing" || fail "the npm tarball lacks $f"
  done
  if grep -v '^package/\(dist/\|package.json$\|README.md$\|LICENSE$\)' <<<"$listing"; then
    fail "the npm tarball holds more than dist/, package.json, README.md and LICENSE (above)"
  fi
  # A fresh project installs it with scripts on: nothing is built (no TypeScript arrives), and
  # both entries load. @redis/client, the peer dependency, comes from the registry.
  mkdir -p "$check"
  (cd "$check"
   echo '{ "name": "dist-check", "version": "1.0.0", "private": true }' >package.json
   npm install -q --ignore-scripts=false --no-audit --no-fund "$tgz" >"$work/node-install.log" 2>&1 \
     || { cat "$work/node-install.log" >&2; exit 1; }
   [[ ! -e node_modules/typescript ]] || { echo "installing the tarball brought TypeScript" >&2; exit 1; }
   node -e 'const d = require("dlock"); if (typeof d.LockManager !== "function") process.exit(1)'
   node --input-type=module -e 'import { LockManager } from "dlock"; if (typeof LockManager !== "function") process.exit(1)'
  ) || fail "the npm tarball does not install and load in a fresh project"
}

# ---------------------------------------------------------------------------------------------
rust_artifacts() {
  # Every workspace crate that is not publish = false (the module dlock, dlock-core,
  # dlock-client, dlock-cli), packaged and verified: cargo builds each from its packaged sources,
  # the crates it depends on taken from the ones packaged beside it.
  local crates=() name
  while read -r name; do crates+=(-p "$name"); done < <(cd "$root" &&
    cargo metadata --no-deps --format-version 1 | jq -r '.packages[] | select(.publish != []) | .name')
  [[ ${#crates[@]} -gt 0 ]] || fail "no publishable crate in the workspace"
  local dirty=()
  [[ ${DIST_ALLOW_DIRTY:-} == 1 ]] && dirty=(--allow-dirty)
  (cd "$root" && nice cargo package -q "${dirty[@]}" "${crates[@]}") || fail "cargo package failed"
  mkdir -p "$dist/crates"
  local i
  for ((i = 1; i < ${#crates[@]}; i += 2)); do
    local crate="$root/target/package/${crates[i]}-$version.crate"
    [[ -f $crate ]] || fail "no $(basename "$crate")"
    cp "$crate" "$dist/crates/"
    # Only sources and manifests: a test fixture or a stray file would show here.
    if tar tzf "$crate" | grep -v "/\(src/.*\.rs\|examples/.*\.rs\|Cargo.toml\|Cargo.toml.orig\|Cargo.lock\|README.md\|LICENSE\|.cargo_vcs_info.json\)$"; then
      fail "$(basename "$crate") holds more than sources and manifests (above)"
    fi
  done
}

# ---------------------------------------------------------------------------------------------
go_artifacts() {
  local at="$dist/goproxy/dlock.dev/dlock/@v" v="v$version"
  mkdir -p "$at"
  (cd "$root/packaging/gomodzip" && GOFLAGS=-mod=readonly nice go build -o "$work/gomodzip" .) \
    || fail "packaging/gomodzip does not build"
  "$work/gomodzip" -module dlock.dev/dlock -version "$v" -dir "$root/go" -out "$at/$v.zip"
  cp "$root/go/go.mod" "$at/$v.mod"
  # The version's time: the last commit's (a proxy's .info; `go list -m` shows it).
  local when
  when=$(cd "$root" && TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
  printf '{"Version":"%s","Time":"%s"}\n' "$v" "$when" >"$at/$v.info"
  echo "$v" >"$at/list"
  local listing; listing=$(python3 -m zipfile -l "$at/$v.zip" | awk 'NR > 1 { print $1 }')
  for f in go.mod go.sum doc.go manager.go transport/connect.go redis/goredis redis/redigo examples/quorum/main.go; do
    grep -q "^dlock.dev/dlock@$v/$f" <<<"$listing" || fail "the module zip lacks $f"
  done
  # A consumer module builds against it, from the file proxy (docs/install.md's settings).
  local check="$work/go-check"
  mkdir -p "$check"
  (cd "$check"
   # The proxy's order: the dist's tree, the modules this machine already has, then the
   # configured proxy; GONOSUMDB: the checksum database has no dlock.dev/dlock of this build.
   export GOPROXY="file://$dist/goproxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" GONOSUMDB=dlock.dev/dlock \
     GOFLAGS="-mod=mod -modcacherw -buildvcs=false" GOMODCACHE="$work/go-modcache"
   go mod init dist-check >/dev/null 2>&1
   go get "dlock.dev/dlock@$v" >"$work/go-get.log" 2>&1 || { cat "$work/go-get.log" >&2; exit 1; }
   printf 'package main\n\nimport "dlock.dev/dlock"\n\nvar _ = dlock.Connect\n\nfunc main() {}\n' >main.go
   nice go build -o /dev/null . && nice go build -o /dev/null dlock.dev/dlock/examples/quorum
  ) || fail "a module depending on dlock.dev/dlock@$v does not build from the file proxy"
}

# ---------------------------------------------------------------------------------------------
java_artifacts() {
  local log="$work/mvn.log"
  # Offline first (as make java-test), online when something is missing from ~/.m2.
  if ! (cd "$root/java" && nice mvn -B -o clean package -DskipTests >"$log" 2>&1); then
    say "java: resolving online"
    (cd "$root/java" && nice mvn -B clean package -DskipTests >"$log" 2>&1) || { cat "$log" >&2; fail "mvn package failed"; }
  fi
  local target="$root/java/target" base="dlock-$version"
  cp "$target/$base.jar" "$target/$base-sources.jar" "$dist/"
  cp "$root/java/pom.xml" "$dist/$base.pom"
  unzip -p "$dist/$base.jar" META-INF/MANIFEST.MF | grep -q "^Automatic-Module-Name: dev.dlock" \
    || fail "the jar's manifest has no Automatic-Module-Name"
  unzip -l "$dist/$base.jar" | grep -q "dev/dlock/LockManager.class" || fail "the jar lacks LockManager"
  unzip -l "$dist/$base-sources.jar" | grep -q "dev/dlock/LockManager.java" || fail "the sources jar lacks LockManager.java"
  # A Maven repository in a folder (a <repository> with a file: URL reads it): deploy-file
  # writes the jar, the sources, the pom, maven-metadata.xml and their checksums.
  local deploy=(org.apache.maven.plugins:maven-deploy-plugin:3.1.4:deploy-file
    -Dfile="$dist/$base.jar" -Dsources="$dist/$base-sources.jar" -DpomFile="$dist/$base.pom"
    -Durl="file://$dist/maven" -DrepositoryId=dist)
  if ! (cd "$work" && mvn -B -o "${deploy[@]}" >"$log" 2>&1); then
    (cd "$work" && mvn -B "${deploy[@]}" >"$log" 2>&1) || { cat "$log" >&2; fail "mvn deploy:deploy-file failed"; }
  fi
  local at="$dist/maven/dev/dlock/dlock/$version"
  for f in "$base.jar" "$base-sources.jar" "$base.pom" "$base.jar.sha1"; do
    [[ -f $at/$f ]] || fail "the Maven repository lacks $f"
  done
}

for client in python node rust go java; do
  [[ $only == *" $client "* ]] || continue
  start=$(date +%s)
  "${client}_artifacts"
  say "$client: $(( $(date +%s) - start )) s"
done
say "done: the clients' packages are in $dist"
