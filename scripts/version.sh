#!/usr/bin/env bash
# Sets the one version of the module and every package: the workspace's Cargo.toml
# ([workspace.package], which the published crates take: the module, dlock-core, the Rust client
# and the CLI; and their [workspace.dependencies] on each other), and the copies package
# formats or languages want literally: python/pyproject.toml, node/package.json and its lock,
# node/src/index.ts (VERSION), go/doc.go (Version), java/pom.xml and Version.java, and the Java
# bench's dependency on it.
# tests/versions.rs checks they agree. Usage: scripts/version.sh 0.4.0
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: scripts/version.sh MAJOR.MINOR.PATCH (got '${version}')" >&2
  exit 2
fi
# The line after [workspace.package], and the first version line of each other file.
sed -i "/^\[workspace.package\]$/{n;s/^version = \".*\"$/version = \"$version\"/}" Cargo.toml
# The published crates' dependencies on each other ([workspace.dependencies]: path and version).
sed -i -E "s/^(dlock-(core|client) = \{ path = \"[^\"]*\", version = )\"[^\"]*\"/\1\"$version\"/" Cargo.toml
sed -i "0,/^version = \".*\"$/s//version = \"$version\"/" python/pyproject.toml
sed -i "0,/^  \"version\": \".*\",$/s//  \"version\": \"$version\",/" node/package.json
# package-lock.json: the package's own two (top level, and packages[""]).
sed -i "0,/^  \"version\": \".*\",$/s//  \"version\": \"$version\",/" node/package-lock.json
sed -i "/^    \"\": {$/,/^    }/s/^      \"version\": \".*\",$/      \"version\": \"$version\",/" node/package-lock.json
sed -i "0,/^export const VERSION = \".*\";$/s//export const VERSION = \"$version\";/" node/src/index.ts
sed -i "s/^const Version = \".*\"$/const Version = \"$version\"/" go/doc.go
# pom.xml: the project's own <version>, the first one (after its artifactId, before any dependency).
sed -i "0,/^  <version>.*<\/version>$/s//  <version>$version<\/version>/" java/pom.xml
sed -i "s/VERSION = \".*\";/VERSION = \"$version\";/" java/src/main/java/dev/dlock/Version.java
sed -i "s/<dlock.version>.*<\/dlock.version>/<dlock.version>$version<\/dlock.version>/" bench/java/pom.xml
cargo update --workspace --offline -q 2>/dev/null || cargo update --workspace -q
echo "version $version set; tests/versions.rs checks it"
