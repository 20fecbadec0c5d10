#!/usr/bin/env bash
# make dist-test's host-side client checks (scripts/dist-clients.sh builds what they use): the
# docs' Go, Java and Rust programs built against the release's packages only, in temp dirs, and run
# against REDIS_URL (one Redis with the module; any, e.g. `redis-server --port 6390 --loadmodule
# target/release/libdlock.so`):
#
#   go    docs/go.md's first program (go/examples/quorum) in a new module that gets
#         dlock.dev/dlock from DIST_DIR/goproxy (a file-based module proxy); DLOCK_NODES=REDIS_URL
#   java  docs/java.md's Quickstart in a throwaway Maven project whose <repository> is
#         DIST_DIR/maven (Lettuce from Maven Central); REDIS_URL as its argument
#   rust  README.md's Rust example in a new crate whose dlock-client is the packaged
#         DIST_DIR/crates/dlock-client-VERSION.crate, unpacked (by path: no registry for it);
#         README's redis://127.0.0.1:6379 replaced by REDIS_URL
#
# Only the programs' text comes from this tree (the docs). Usage: scripts/dist-check-clients.sh
# REDIS_URL DIST_DIR. DIST_CHECKS="go java" runs only those. A line per check with its time; the
# Rust build's target dir is kept (target/dist-check) so a second run is quick.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: scripts/dist-check-clients.sh REDIS_URL DIST_DIR" >&2; exit 2; }
url=$1
root=$(cd "$(dirname "$0")/.." && pwd)
dist=$(cd "$2" && pwd)
version=$(sed -n '/^\[workspace.package\]$/{n;s/^version = "\(.*\)"$/\1/p}' "$root/Cargo.toml")
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
only=" ${DIST_CHECKS:-go java rust} "

say() { echo "dist-check-clients: $*"; }

# The body of the first fenced block of FILE whose opening line starts with PREFIX.
block() {
  awk -v prefix="$2" 'open && /^```/ { exit } open { print } index($0, prefix) == 1 { open = 1 }' "$1"
}

check_go() {
  local dir="$tmp/go"
  mkdir -p "$dir" && cd "$dir"
  export GOPROXY="file://$dist/goproxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" \
    GONOSUMDB=dlock.dev/dlock GOFLAGS="-mod=mod -modcacherw -buildvcs=false" GOMODCACHE="$dir/modcache"
  go mod init dist-check >/dev/null 2>&1
  block "$root/docs/go.md" '```go example=go/examples/quorum/main.go' >main.go
  grep -q '"dlock.dev/dlock"' main.go || { echo "docs/go.md's program not found" >&2; return 1; }
  # dlock.dev/dlock from the release's proxy files alone, into this run's empty module cache: the
  # proxy list below falls through to the host's cache for the other modules, and could hand over
  # a dlock.dev/dlock cached there if the release's files lacked one.
  GOPROXY="file://$dist/goproxy" timeout 300 go mod download "dlock.dev/dlock@v$version"
  timeout 300 go get "dlock.dev/dlock@v$version"
  timeout 300 nice go build -o quorum .
  local out
  out=$(DLOCK_NODES=$url timeout 60 ./quorum dist-check-go sh -c 'echo "token $DLOCK_TOKEN"')
  echo "$out"
  [[ $out =~ ^token\ [0-9]+$ ]]
}

check_java() {
  local dir="$tmp/java" m2="$HOME/.m2/repository"
  mkdir -p "$dir/src/main/java/dev/dlock/examples" && cd "$dir"
  block "$root/docs/java.md" '```java example=java/src/test/java/dev/dlock/examples/Quickstart.java' \
    >src/main/java/dev/dlock/examples/Quickstart.java
  grep -q 'class Quickstart' src/main/java/dev/dlock/examples/Quickstart.java || { echo "docs/java.md's Quickstart not found" >&2; return 1; }
  # A local repository of its own (so the jar is the one in DIST_DIR, never one cached before);
  # what ~/.m2 already holds is read as one more repository before Maven Central.
  cat >pom.xml <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>dist-check</artifactId>
  <version>1</version>
  <repositories>
    <repository><id>dlock-dist</id><url>file://$dist/maven</url></repository>
    <repository><id>m2-cache</id><url>file://$m2</url></repository>
  </repositories>
  <pluginRepositories>
    <pluginRepository><id>m2-cache</id><url>file://$m2</url></pluginRepository>
  </pluginRepositories>
  <dependencies>
    <dependency><groupId>dev.dlock</groupId><artifactId>dlock</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
EOF
  timeout 300 mvn -B -q -Dmaven.repo.local="$dir/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath -Dmdep.outputFile=cp.txt >mvn.log 2>&1 \
    || { cat mvn.log >&2; return 1; }
  cmp "$dir/m2/dev/dlock/dlock/$version/dlock-$version.jar" "$dist/maven/dev/dlock/dlock/$version/dlock-$version.jar"
  mkdir classes
  javac -d classes -cp "$(cat cp.txt)" src/main/java/dev/dlock/examples/Quickstart.java
  local out
  out=$(timeout 60 java -cp "classes:$(cat cp.txt)" dev.dlock.examples.Quickstart "$url")
  echo "$out"
  [[ $out =~ held\ under\ token\ [0-9]+ ]]
}

check_rust() {
  local dir="$tmp/rust"
  mkdir -p "$dir/crates" "$dir/app/src" && cd "$dir"
  tar xzf "$dist/crates/dlock-client-$version.crate" -C crates
  # README's dependency lines, the path made the unpacked crate's.
  block "$root/README.md" '```toml install' \
    | sed "s#path = \"[^\"]*\"#path = \"$dir/crates/dlock-client-$version\"#" >deps.toml
  grep -q "crates/dlock-client-$version" deps.toml || { echo "README.md's [dependencies] not found" >&2; return 1; }
  { printf '[package]\nname = "dist-check"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n\n'; cat deps.toml; } >app/Cargo.toml
  block "$root/README.md" '```rust example=client/examples/readme.rs' | sed "s#redis://127.0.0.1:6379#$url#" >app/src/main.rs
  grep -q "$url" app/src/main.rs || { echo "README.md's Rust example not found" >&2; return 1; }
  cd app
  timeout 900 nice cargo build -q --release --target-dir "${DIST_CHECK_TARGET:-$root/target/dist-check}"
  local out
  out=$(timeout 60 "${DIST_CHECK_TARGET:-$root/target/dist-check}/release/dist-check")
  echo "$out"
  [[ $out =~ ^token\ [0-9]+$ ]]
}

# Each check in a bash of its own, so that its first failing command ends it (errexit holds
# there, not in an `if`'s condition).
export url root dist version tmp
export -f block check_go check_java check_rust
failed=0
for check in go java rust; do
  [[ $only == *" $check "* ]] || continue
  start=$(date +%s)
  if bash -euo pipefail -c "check_$check" >"$tmp/$check.log" 2>&1; then
    say "$check: ok ($(( $(date +%s) - start )) s): $(tail -1 "$tmp/$check.log")"
  else
    sed 's/^/  /' "$tmp/$check.log" >&2
    say "$check: FAILED ($(( $(date +%s) - start )) s)"
    failed=1
  fi
done
exit $failed
