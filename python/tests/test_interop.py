"""The Rust `dlock run` CLI and the Python client contend for one resource from several
processes: the critical sections must never overlap and their fencing tokens must strictly
increase across both languages."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

from cluster import CLI, Server
from conftest import free_everywhere, urls

ROUNDS = 4  # critical sections per process
HOLD = "0.02"  # seconds inside each

PYTHON_WORKER = """
import sys, time
from dlock import LockManager
nodes, log, rounds, hold = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with LockManager(nodes, timeout=0.5) as locks:
    for _ in range(rounds):
        with locks.lock("interop", ttl=10.0, wait=60.0) as lock:
            with open(log, "a") as f:
                f.write(f"python {lock.token()} start\\n")
            time.sleep(hold)
            with open(log, "a") as f:
                f.write(f"python {lock.token()} end\\n")
"""

CLI_SECTION = 'echo "rust $DLOCK_TOKEN start" >> "$LOG"; sleep {hold}; echo "rust $DLOCK_TOKEN end" >> "$LOG"'


def rust_worker(nodes: str, log: Path) -> subprocess.Popen[bytes]:
    run = [
        str(CLI),
        "run",
        "interop",
        "--nodes",
        nodes,
        "--timeout",
        "500ms",
        "--ttl",
        "10s",
        "--wait",
        "60s",
        "--",
        "sh",
        "-c",
        CLI_SECTION.format(hold=HOLD),
    ]
    loop = f'for i in $(seq {ROUNDS}); do "$@" || exit $?; done'
    return subprocess.Popen(["sh", "-c", loop, "sh", *run], env={**os.environ, "LOG": str(log)})


def python_worker(nodes: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", PYTHON_WORKER, nodes, str(log), str(ROUNDS), HOLD])


def sections(log: Path) -> list[tuple[str, int]]:
    """(language, token) of each critical section, checking that each start is followed by its
    own end before anything else starts (no overlap)."""
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) % 2 == 0, "a section never ended"
    found = []
    for start, end in zip(lines[::2], lines[1::2], strict=True):
        assert start[2] == "start" and end[2] == "end" and start[:2] == end[:2], f"overlap: {start} / {end}"
        found.append((start[0], int(start[1])))
    return found


def test_rust_cli_and_python_never_overlap_and_tokens_increase(three: list[Server], tmp_path: Path) -> None:
    assert CLI.exists(), f"{CLI} is missing: run `make build` (or set DLOCK_CLI)"
    nodes, log = ",".join(urls(three)), tmp_path / "sections.log"
    workers = [rust_worker(nodes, log), python_worker(nodes, log), rust_worker(nodes, log), python_worker(nodes, log)]
    for worker in workers:
        assert worker.wait(timeout=120) == 0
    found = sections(log)
    assert len(found) == 4 * ROUNDS
    assert {language for language, _ in found} == {"rust", "python"}
    tokens = [token for _, token in found]
    assert all(a < b for a, b in itertools.pairwise(tokens)), tokens
    assert free_everywhere(three, "interop")
