"""`dlock top` live and the waiting line of `dlock run`, on a real terminal: tmux (installed by
make monitoring-test) runs the binary in a pane, and the test reads the pane. Skipped, saying so,
only when tmux is missing."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cluster import Server, start

ROOT = Path(__file__).resolve().parents[2]
DLOCK = ROOT / "target" / "release" / "dlock"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing (apt-get install tmux)")


class Pane:
    """One detached tmux session on a server of its own (-L), killed at the end."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.socket = f"dlock-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        shell = f"env {exports} {command}; echo EXITED=$?; sleep 60"
        self.tmux("new-session", "-d", "-s", "t", "-x", "180", "-y", "30", shell)

    def tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def until(self, what: str, check: Callable[[str], bool], within: float = 10.0) -> str:
        deadline = time.monotonic() + within
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            assert time.monotonic() < deadline, f"{what} not on screen within {within}s:\n{screen}"
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def three() -> Iterator[list[Server]]:
    servers = start(3)
    yield servers
    for server in servers:
        server.stop()


def run_dlock(servers: list[Server], *args: str) -> str:
    env = {"DLOCK_NODES": ",".join(s.url for s in servers), "DLOCK_TIMEOUT": "500ms"}
    out = subprocess.run([str(DLOCK), *args], env=env, capture_output=True, text=True, timeout=30, check=True)
    return out.stdout


def nodes_env(servers: list[Server]) -> dict[str, str]:
    return {"DLOCK_NODES": ",".join(s.url for s in servers), "DLOCK_TIMEOUT": "500ms"}


def test_the_waiting_line_shows_place_holder_and_time_then_goes(three: list[Server]) -> None:
    owner = run_dlock(three, "acquire", "hot", "--ttl", "30s").split()[0]
    pane = Pane(f"{DLOCK} run hot --wait 20s -- echo RAN", nodes_env(three))
    try:
        line = pane.until("the waiting line", lambda s: "waiting for hot" in s)
        assert "1st of 1 in queue" in line
        assert f"held by {owner}" in line
        assert "of lease left" in line and "waited" in line
        run_dlock(three, "release", "hot", owner)
        screen = pane.until("the command's output", lambda s: "EXITED=0" in s)
        assert "RAN" in screen
        assert "waiting for" not in screen, f"the line is erased once the lock is held:\n{screen}"
    finally:
        pane.close()


def test_quiet_keeps_the_terminal_silent(three: list[Server]) -> None:
    owner = run_dlock(three, "acquire", "hot", "--ttl", "30s").split()[0]
    pane = Pane(f"{DLOCK} acquire hot --wait 20s --quiet", nodes_env(three))
    try:
        time.sleep(1.5)  # the line would be up after 0.3 s
        assert "waiting for" not in pane.screen()
        run_dlock(three, "release", "hot", owner)
        pane.until("the grant", lambda s: "EXITED=0" in s)
    finally:
        pane.close()


def test_top_is_live_and_q_quits_restoring_the_terminal(three: list[Server]) -> None:
    owner = run_dlock(three, "acquire", "orders", "--ttl", "30s").split()[0]
    pane = Pane(f"{DLOCK} top --interval 200ms", nodes_env(three))
    try:
        screen = pane.until("the table", lambda s: "HELD" in s and "orders" in s)
        assert "3 of 3 nodes answered" in screen and owner in screen
        run_dlock(three, "acquire", "later", "--ttl", "30s")
        pane.until("a refresh with the new lock", lambda s: "later" in s)
        pane.keys("q")
        screen = pane.until("the exit", lambda s: "EXITED=0" in s)
        assert "HELD" not in screen, f"the alternate screen is left:\n{screen}"
        pane.keys("echo typed", "Enter")
        pane.until("echo back on (the terminal mode restored)", lambda s: "echo typed" in s)
    finally:
        pane.close()


def test_top_quits_on_ctrl_c(three: list[Server]) -> None:
    pane = Pane(f"{DLOCK} top --interval 200ms", nodes_env(three))
    try:
        pane.until("the table", lambda s: "WAITING" in s)
        pane.keys("C-c")
        pane.until("the exit", lambda s: "EXITED=0" in s)
    finally:
        pane.close()


def test_the_waiting_line_names_a_shared_lock_s_holders(three: list[Server]) -> None:
    readers = [run_dlock(three, "acquire", "doc", "--ttl", "30s", "--shared").split()[0] for _ in range(2)]
    pane = Pane(f"{DLOCK} run doc --wait 20s -- echo WROTE", nodes_env(three))
    try:
        line = pane.until("the waiting line", lambda s: "waiting for doc" in s)
        assert "1st of 1 in queue" in line and " and 1 more (" in line, line
        assert any(f"held by {r}" in line for r in readers), line
        for reader in readers:
            run_dlock(three, "release", "doc", reader)
        pane.until("the writer's turn", lambda s: "EXITED=0" in s and "WROTE" in s)
    finally:
        pane.close()
