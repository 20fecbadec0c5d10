"""Real redis-server processes with the built dlock module (the pytest twin of testkit/src):
each on a free loopback port with its own temp dir, killed at teardown; and a real Redis Cluster
of them (testkit/src/cluster.rs), joined by `redis-cli --cluster create` as an operator does it.
Nothing mocks Redis."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
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
    """One redis-server with the module; `kill()`, `pause()`/`resume()` (SIGSTOP/SIGCONT).
    `conf_lines` go to a config file of its own (mode 600), read first: where secrets (ACL users'
    passwords) go, never into argv."""

    def __init__(
        self, module_args: tuple[str, ...] = (), config: tuple[str, ...] = (), conf_lines: tuple[str, ...] = ()
    ) -> None:
        self.module_args = module_args  # after the module path: `quarantine-ms 5000`, ...
        self.config = config  # server options: `--cluster-enabled yes`, ...
        self.conf_lines = conf_lines
        self.module = True  # False: a plain redis-server (as one with a module older than a command)
        self.dir = tempfile.mkdtemp(prefix="dlock-py-")
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def listen(self) -> list[str]:
        """The arguments that say where it listens (a TLS server: TLS only)."""
        return ["--port", str(self.port)]

    def conf_file(self) -> list[str]:
        if not self.conf_lines:
            return []
        path = Path(self.dir) / "redis.conf"
        path.write_text("".join(f"{line}\n" for line in self.conf_lines))
        path.chmod(0o600)
        return [str(path)]

    def spawn(self) -> None:
        argv = [
            server_binary(),
            *self.conf_file(),
            *self.listen(),
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
            *self.config,
            *(["--loadmodule", module_path(), *self.module_args] if self.module else []),
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
                info = self.client(timeout=0.5).info("server")
                if info.get("process_id") == self.process.pid:
                    return True
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            time.sleep(0.01)  # nothing to wait on but the port: poll briefly
        return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self, timeout: float = 5.0) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=timeout, protocol=2)

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
    """Starts `count` servers at once."""
    return launch([Server(module_args) for _ in range(count)])


def launch(servers: list[Server]) -> list[Server]:
    """Starts `servers` at once; a port taken meanwhile by someone else is retried."""
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
            for started in servers:  # none left running behind the error
                started.kill()
            raise RuntimeError(f"redis-server would not start; see {server.dir}/redis.log")
    return servers


# No 5 s pause before a replica's first sync (repl-diskless-sync-delay): a replica is up at once.
CLUSTER_CONFIG = (
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "1000",
    "--repl-diskless-sync-delay",
    "0",
)


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def cluster_port(taken: set[int]) -> int:
    """A client port whose cluster bus port (+10000) was free a moment ago too: ephemeral ports
    are above 32768 and port + 10000 must exist, so fold into 20000-29999 (bus 30000-39999)."""
    while True:
        port = 20_000 + free_port() % 10_000
        if port not in taken and bindable(port) and bindable(port + 10_000):
            taken.add(port)
            return port


class Cluster:
    """`nodes[:masters]` start as masters, the rest as their replicas (`redis-cli` decides who
    replicates whom; ask with `replica_of`)."""

    def __init__(self, masters: int = 3, replicas: int = 1) -> None:
        taken: set[int] = set()
        self.nodes = [Server(config=CLUSTER_CONFIG) for _ in range(masters * (1 + replicas))]
        for node in self.nodes:
            node.port = cluster_port(taken)
        self.masters = masters
        self.replicas = replicas

    def start(self) -> Cluster:
        for node in self.nodes:
            node.spawn()
        for node in self.nodes:
            if not node.wait_ready():
                raise RuntimeError(f"redis-server would not start; see {node.dir}/redis.log")
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        create = ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", str(self.replicas)]
        out = subprocess.run([*create, "--cluster-yes"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout}{out.stderr}")
        self.wait_ok()
        return self

    def url(self, node: Server | None = None) -> str:
        """The cluster's URL with `node` (default the first) as its seed."""
        return f"redis+cluster://127.0.0.1:{(node or self.nodes[0]).port}"

    def wait_ok(self, within: float = 30.0) -> None:
        """Until every node reports cluster_state:ok with all slots, every replica's link is up,
        and every node's CLUSTER NODES shows the same topology (right after create the views can
        differ)."""
        deadline = time.monotonic() + within
        while not (self.all_healthy() and self.all_agree()):
            if time.monotonic() > deadline:
                raise AssertionError(f"cluster not ok within {within}s")
            time.sleep(0.05)

    def running(self) -> list[Server]:
        """The nodes not killed."""
        return [node for node in self.nodes if node.running]

    def all_healthy(self) -> bool:
        for node in self.running():
            try:
                info = node.client().execute_command("CLUSTER", "INFO").decode()
                replication = node.client().info("replication")
            except redis.RedisError:
                return False
            healthy = "cluster_state:ok" in info and "cluster_slots_ok:16384" in info
            linked = replication.get("role") == "master" or replication.get("master_link_status") == "up"
            if not (healthy and linked):
                return False
        return True

    def all_agree(self) -> bool:
        try:
            views = [topology(node.client().execute_command("CLUSTER", "NODES").decode()) for node in self.running()]
        except redis.RedisError:
            return False
        return all(view == views[0] for view in views)

    def slot(self, key: str) -> int:
        slot: int = self.running()[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        return slot

    def master_for(self, key: str) -> Server:
        """The master serving `key`'s slot, by its own account."""
        slot = self.slot(key)
        for node in self.running():
            myid = node.client().execute_command("CLUSTER", "MYID")
            for start, end, master, *_ in node.client().execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end and master[2] == myid:
                    return node
        raise AssertionError(f"no master serves {key!r}")

    def replica_of(self, master: Server) -> Server:
        for node in self.running():
            if node.client().info("replication").get("master_port") == master.port:
                return node
        raise AssertionError(f"no replica of {master.port}")

    def key_not_on(self, seed: Server, prefix: str) -> str:
        """A key of `prefix` whose slot `seed` does not serve."""
        return next(key for i in range(100) if self.master_for(key := f"{prefix}-{i}") is not seed)

    def other_master(self, than: Server) -> Server:
        return next(n for n in self.running() if n is not than and n.client().info("replication")["role"] == "master")

    def migrate_slot(self, key: str, source: Server, target: Server, before_announcing: Callable[[], None]) -> None:
        """Moves `key`'s slot the way `redis-cli --cluster reshard` does: IMPORTING, MIGRATING,
        MIGRATE of the key, then the new owner announced to every master.
        `before_announcing` runs between MIGRATE and the announcement (the ASK window)."""
        slot = self.slot(key)
        source_id, target_id = (n.client().execute_command("CLUSTER", "MYID") for n in (source, target))
        target.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        source.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        source.client().execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", key)
        before_announcing()
        for node in self.nodes:
            if node.client().info("replication")["role"] == "master":
                node.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        self.wait_ok()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def topology(nodes: str) -> set[str]:
    """The nodes a CLUSTER NODES answer sees alive, one line each: ID, role, master ID and the
    slots served (a node's own importing/migrating marks left out: only it shows them)."""
    seen = set()
    for line in nodes.splitlines():
        fields = line.split()
        if len(fields) < 8 or any(flag in fields[2] for flag in ("fail", "handshake", "noaddr")):
            continue
        role = "master" if "master" in fields[2] else "replica"
        slots = [s for s in fields[8:] if not s.startswith("[")]
        seen.add(" ".join([fields[0], role, fields[3], *slots]))
    return seen
