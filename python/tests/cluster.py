"""Real redis-server processes with the built dlock module (the pytest twin of testkit/src):
each on a free loopback port with its own temp dir, killed at teardown. Nothing mocks Redis."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]


#: The Rust CLI, for the interop tests.
CLI = Path(os.environ.get("DLOCK_CLI", REPO / "target/release/dlock"))


def module_path() -> str:
    path = Path(os.environ.get("DLOCK_MODULE", REPO / "target/release/libdlock.so"))
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make build` (or set DLOCK_MODULE)")
    return str(path)


def server_binary() -> str:
    return os.environ.get("DLOCK_REDIS_SERVER", "redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """One redis-server with the module; `kill()`, `pause()`/`resume()` (SIGSTOP/SIGCONT)."""

    def __init__(self, module_args: tuple[str, ...] = ()) -> None:
        self.module_args = module_args  # after the module path: `quarantine-ms 5000`, ...
        self.dir = tempfile.mkdtemp(prefix="dlock-py-")
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def spawn(self) -> None:
        argv = [
            server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir,
            "--logfile",
            "redis.log",
            "--loadmodule",
            module_path(),
            *self.module_args,
        ]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_ready(self, within: float = 10.0) -> bool:
        """True once our own process answers on the port. The answering `process_id` must be
        ours: when two servers are handed the same free port, the one that lost the bind has
        not exited yet while the winner already answers PING."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                info = redis.Redis(port=self.port, socket_timeout=0.5).info("server")
                if info.get("process_id") == self.process.pid:
                    return True
            except redis.ConnectionError:
                pass
            time.sleep(0.01)  # nothing to wait on but the port: poll briefly
        return False

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5, protocol=2)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        """Kill -9 and start again on the same port (no persistence: the data is gone)."""
        self.kill()
        self.spawn()
        if not self.wait_ready():
            raise RuntimeError(f"redis-server would not restart; see {self.dir}/redis.log")

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def start(count: int, module_args: tuple[str, ...] = ()) -> list[Server]:
    """Starts `count` servers at once; a port taken meanwhile by someone else is retried."""
    servers = [Server(module_args) for _ in range(count)]
    taken: set[int] = set()
    for server in servers:  # the OS may hand the same free port out twice
        while server.port in taken:
            server.port = free_port()
        taken.add(server.port)
    for server in servers:
        server.spawn()
    for server in servers:
        for _ in range(5):
            if server.wait_ready():
                break
            server.kill()
            server.port = free_port()
            server.spawn()
        else:
            raise RuntimeError(f"redis-server would not start; see {server.dir}/redis.log")
    return servers
