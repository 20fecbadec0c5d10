#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt is configured with (deb822 or one-line format), so
# scripts that fetch Debian files (compat-servers.sh, dist-test.sh) use the machine's own mirror,
# never an address of their own. Exits 1, saying so, when apt names none.
set -euo pipefail
uri=$({
  cat /etc/apt/sources.list.d/*.sources | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}'
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '/^deb / {print ($2 ~ /^\[/ ? $3 : $2)}'
} 2>/dev/null | grep -E '/debian/?$' | head -n 1 || true)
[ -n "$uri" ] || { echo "no Debian mirror in this machine's apt configuration" >&2; exit 1; }
echo "$uri"
