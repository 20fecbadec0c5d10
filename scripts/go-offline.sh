#!/usr/bin/env bash
# The Go client's offline build (make go-test, make bench): writes target/go/go.work, a
# workspace whose replace directives point go/go.mod's requirements at Debian's copies of their
# sources (golang-github-gomodule-redigo-dev, golang-github-mna-redisc-dev, in
# /usr/share/gocode), so nothing is fetched and go/go.mod stays an ordinary require. Prints the
# environment to build with (GOWORK, GOPROXY=off). Fails when Debian's versions are not the
# ones go/go.mod requires.
set -euo pipefail
cd "$(dirname "$0")/.."
src=/usr/share/gocode/src/github.com
out=target/go

# The version go/go.mod requires of a module, and the upstream version of a Debian package.
required() { awk -v m="$1" '$1 == m { print $2 }' go/go.mod; }
packaged() { dpkg-query -W -f '${Version}' "$1" | sed -E 's/^[0-9]+://; s/-[^-]*$//'; }

redigo=$(required github.com/gomodule/redigo)
redisc=$(required github.com/mna/redisc)
for pair in "golang-github-gomodule-redigo-dev $redigo" "golang-github-mna-redisc-dev $redisc"; do
  set -- $pair
  have="v$(packaged "$1")"
  [ "$have" = "$2" ] || { echo "go-offline: go/go.mod requires $2 but Debian's $1 is $have" >&2; exit 1; }
done

# redisc v1.1.7 has no go.mod (upstream neither): a replacement directory needs one, so its
# package files are linked into a directory with the go.mod the go command would synthesize.
rm -rf "$out/redisc"
mkdir -p "$out/redisc"
for f in "$src"/mna/redisc/*.go; do
  case $f in *_test.go) ;; *) ln -s "$f" "$out/redisc/" ;; esac
done
printf 'module github.com/mna/redisc\n' >"$out/redisc/go.mod"

# redigo's go.mod (go 1.14, so its requirements are not pruned) names testify for its own tests,
# which nothing here builds: a go.mod alone stands in for it, ending the module graph there.
testify=$(awk '$1 == "require" && $2 == "github.com/stretchr/testify" { print $3 }' "$src/gomodule/redigo/go.mod")
mkdir -p "$out/testify"
printf 'module github.com/stretchr/testify\n' >"$out/testify/go.mod"

cat >"$out/go.work" <<WORK
go 1.19

use (
	../../go
	../../bench/harness/go
)

replace github.com/gomodule/redigo $redigo => $src/gomodule/redigo

replace github.com/mna/redisc $redisc => ./redisc

replace github.com/stretchr/testify $testify => ./testify
WORK
echo "GOWORK=$PWD/$out/go.work GOPROXY=off GOTOOLCHAIN=local"
