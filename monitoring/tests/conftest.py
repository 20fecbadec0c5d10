"""The monitoring tests (make monitoring-test): the real redis_exporter and promtool from Debian's
packages against real redis-server nodes with the module. Servers come from the Python client's
test helpers (python/tests/cluster.py), so both suites start nodes one way."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from cluster import Server, start  # noqa: E402


@pytest.fixture
def one() -> Iterator[Server]:
    servers = start(1)
    yield servers[0]
    servers[0].stop()
