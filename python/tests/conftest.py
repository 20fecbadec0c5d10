from __future__ import annotations

import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cluster import Cluster, Server, launch, start
from secure import Pki, TLSServer, make_pki


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt for the test's duration, whatever the suite inherited: a
    shell starts background jobs (and nohup, some CI runners) with SIGINT ignored, and Python then
    installs no handler of its own."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.fixture
def five() -> Iterator[list[Server]]:
    """Five fresh masters with the module (killed at teardown)."""
    servers = start(5)
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def three() -> Iterator[list[Server]]:
    servers = start(3)
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture(params=[1, 5], ids=["one master", "five masters"])
def masters(request: pytest.FixtureRequest) -> Iterator[list[Server]]:
    """One fresh master, then five (a test taking it runs on each)."""
    servers = start(request.param)
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def one() -> Iterator[Server]:
    servers = start(1)
    yield servers[0]
    servers[0].stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Cluster]:
    """One cluster of 3 masters + 3 replicas for the whole session (about 2 s to start and
    settle). Tests find the shard they need by key; a test that migrates a slot leaves a valid
    cluster behind."""
    cluster = Cluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def master_with_replica() -> Iterator[tuple[Server, Server]]:
    """A plain master (not a cluster) with one replica, its link up."""
    master, replica = start(2)
    master.client().config_set("repl-diskless-sync-delay", 0)  # no 5 s pause before the first sync
    replica.client().execute_command("REPLICAOF", "127.0.0.1", master.port)
    eventually(lambda: replica.client().info("replication").get("master_link_status") == "up", what="replica link")
    yield master, replica
    for server in (master, replica):
        server.stop()


def urls(servers: list[Server]) -> list[str]:
    return [s.url for s in servers]


def status(server: Server, key: str) -> dict[str, object] | None:
    """DLOCK.STATUS as a dict (None when free)."""
    reply = server.client().execute_command("DLOCK.STATUS", key)
    if reply is None:
        return None
    fields = [f.decode() if isinstance(f, bytes) else f for f in reply]
    return dict(zip(fields[::2], fields[1::2], strict=True))


def waiters(server: Server, key: str) -> list[list[object]]:
    return list(server.client().execute_command("DLOCK.WAITERS", key))


def eventually(condition: Callable[[], bool], within: float = 5.0, what: str = "condition") -> None:
    """Waits until `condition()` holds (the nodes push nothing we could block on), failing after
    `within` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        time.sleep(0.005)


def free_everywhere(servers: list[Server], key: str) -> bool:
    return all(status(s, key) is None and not waiters(s, key) for s in servers)


@pytest.fixture(scope="session")
def pki() -> Iterator[Pki]:
    """A CA, server and client certificates, made once per session with the openssl CLI."""
    made = make_pki()
    yield made
    shutil.rmtree(made.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_three(pki: Pki) -> Iterator[list[TLSServer]]:
    """Three TLS-only masters asking for client certificates, with the ACL user only."""
    servers = launch([TLSServer(pki) for _ in range(3)])
    yield servers
    for server in servers:
        server.stop()
