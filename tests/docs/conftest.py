"""The docs' examples as tests (`make docs-test`, in `make test`): examples.py reads them,
fleet.py starts the servers they run against, runner.py runs them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from examples import ROOT
from fleet import FIXTURES, Fleet


class Fleets:
    """Each fixture's servers, started when an example first needs them, stopped at the end."""

    def __init__(self) -> None:
        self.started: dict[str, Fleet] = {}

    def get(self, name: str) -> Fleet:
        if name not in self.started:
            self.started[name] = FIXTURES[name]()
        return self.started[name]

    def stop(self) -> None:
        for fleet in self.started.values():
            fleet.stop()


@pytest.fixture(scope="session")
def fleets() -> Iterator[Fleets]:
    made = Fleets()
    yield made
    made.stop()


@pytest.fixture(scope="session")
def built() -> None:
    """The CLI, the module, the Rust examples (the pages' Rust blocks are their text) and the
    Node package's dist/ are built (no-ops when `make test`'s earlier suites did it)."""
    # The whole workspace, not `-p`: one package's features alone would compile the client again.
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "--examples"], cwd=ROOT, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=ROOT / "node", check=True)
