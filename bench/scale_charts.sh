#!/usr/bin/env bash
# `make bench-scale`, last step: draws docs/bench/scale-*.png from bench/scale-results.json with
# matplotlib, installed into bench/.venv when missing. Without PyPI (or venv) the charts are
# skipped with a notice; the tables are already written.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/scale-results.json}
out=${2:-$here/../docs/bench}
skip() { echo "bench-scale: $1: charts skipped (the tables in docs/bench/scale.md stand)" >&2; exit 0; }
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv" >/dev/null 2>&1 || skip "python3 -m venv failed"
fi
if ! "$here/.venv/bin/python" -c 'import matplotlib' >/dev/null 2>&1; then
  "$here/.venv/bin/pip" install -q --disable-pip-version-check matplotlib >/dev/null 2>&1 \
    || skip "pip install matplotlib failed (PyPI unreachable?)"
fi
"$here/.venv/bin/python" "$here/scale_charts.py" "$results" "$out"
