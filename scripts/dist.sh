#!/usr/bin/env bash
# make dist: every release artifact into dist/ (wiped first), then dist/SHA256SUMS.
#   1. cargo build --release (the module and the CLI),
#   2. scripts/dist-native.sh: the module's and the CLI's tarballs and Debian packages, lintian,
#   3. scripts/dist-clients.sh dist (when present): the clients' packages,
#   4. SHA256SUMS: a sha256sum line for every file under dist/ (relative paths), written last.
# Each step's time and the total are printed (docs/releasing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=dist
start=$(date +%s)
step() { # NAME CMD...: runs CMD, prints its time
  local name=$1 t0; shift
  t0=$(date +%s)
  echo "== dist: $name"
  "$@"
  echo "== dist: $name: $(($(date +%s) - t0)) s"
}

rm -rf "$dist"
mkdir -p "$dist"
step "cargo build --release" nice "${CARGO:-cargo}" build --release
step "native (module, CLI: tarballs and .debs)" bash scripts/dist-native.sh "$dist"
if [ -x scripts/dist-clients.sh ]; then
  step "clients" scripts/dist-clients.sh "$dist"
else
  echo "== dist: clients: SKIPPED: no scripts/dist-clients.sh (no wheel, npm, crates, Go or Java artifacts)"
fi
sums=$(cd "$dist" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum)
printf '%s\n' "$sums" >"$dist/SHA256SUMS"
echo "== dist: $(wc -l <"$dist/SHA256SUMS") files in $dist/ (SHA256SUMS lists them):"
sed 's/^[0-9a-f]*  /  /' "$dist/SHA256SUMS"
echo "== dist: total $(($(date +%s) - start)) s"
