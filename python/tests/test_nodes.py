"""Nodes given other ways than host:port URLs: Unix sockets (`unix:///path/redis.sock`) and
ready-made redis-py clients (`redis.Redis` for the sync manager, `redis.asyncio.Redis` for the
asyncio one), whose connection settings dlock's own connections take on. Waits on the nodes,
status and a contended hand-over work over each."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from cluster import Server, launch
from conftest import free_everywhere, urls
from secure import PASSWORD, USER, ACLServer, Pki, TLSServer, redis_py_tls

import dlock
import dlock.asyncio


@pytest.fixture(scope="module")
def unix_three() -> Iterator[list[ACLServer]]:
    """Three masters listening on Unix sockets too, with only the ACL user."""
    servers = launch([ACLServer(unix=True) for _ in range(3)])
    yield servers
    for server in servers:
        server.stop()


def hand_over(locks: dlock.LockManager, other: dlock.LockManager, key: str) -> None:
    """`other` waits on the nodes while `locks` holds `key`, and gets it at the release."""
    handed: list[int] = []
    with locks.lock(key, ttl=5.0, wait=1.0) as lock:
        assert [v.info.token for v in locks.status(key) if v.info].count(lock.token()) >= 2
        waiter = threading.Thread(target=lambda: handed.append(other.lock(key, ttl=5.0, wait=5.0).token()))
        waiter.start()
        lock.extend(10.0)
    waiter.join(5.0)
    assert handed and handed[0] > lock.token()
    owner = next(v.info.owner for v in other.status(key) if v.info)
    assert other.release_owner(key, owner) == 3


def test_unix_socket_nodes(unix_three: list[ACLServer]) -> None:
    sockets = [f"unix://{s.socket}" for s in unix_three]
    in_url = [f"unix://{USER}:{PASSWORD}@{s.socket}" for s in unix_three]  # credentials in the URL work too
    locks = dlock.LockManager(sockets, username=USER, password=PASSWORD, timeout=0.5)
    other = dlock.LockManager(in_url, timeout=0.5)
    hand_over(locks, other, "unix")
    assert free_everywhere(unix_three, "unix")  # type: ignore[arg-type]
    assert other.nodes == [f"unix://{USER}:***@{s.socket}" for s in unix_three]

    async def test() -> None:
        alocks = dlock.asyncio.LockManager(sockets, username=USER, password=PASSWORD, timeout=0.5)
        async with alocks, alocks.lock("unix-async", ttl=5.0, wait=1.0) as lock:
            assert [v.info.token for v in await alocks.status("unix-async") if v.info].count(await lock.token()) >= 2
            await lock.extend(10.0)

    asyncio.run(test())
    assert free_everywhere(unix_three, "unix-async")  # type: ignore[arg-type]


def test_ready_made_clients_lend_their_settings(three: list[Server]) -> None:
    """Clients configured their own way (RESP3, decoded replies, a name, retries): dlock's
    connections keep the address, credentials and name, and use RESP2, bytes, no retries."""

    def client(server: Server) -> redis.Redis:
        settings = {"protocol": 3, "decode_responses": True, "client_name": "app-locks"}
        return redis.Redis(host="127.0.0.1", port=server.port, **settings)  # type: ignore[arg-type]

    locks = dlock.LockManager([client(s) for s in three], timeout=0.5)
    other = dlock.LockManager([client(three[0]), *urls(three[1:])], timeout=0.5)  # clients and URLs mixed
    assert locks.nodes == urls(three)
    hand_over(locks, other, "ready")
    assert all("name=app-locks" in str(s.client().execute_command("CLIENT", "LIST")) for s in three)
    assert free_everywhere(three, "ready")


def test_ready_made_tls_clients(tls_three: list[TLSServer], pki: Pki) -> None:
    """redis-py's own TLS connections (ssl=True and its ssl_* arguments)."""
    clients = [redis.Redis(host="127.0.0.1", port=s.port, **redis_py_tls(pki)) for s in tls_three]  # type: ignore[arg-type]
    locks = dlock.LockManager(clients, timeout=0.5)
    assert locks.nodes == urls(tls_three)
    hand_over(locks, dlock.LockManager(clients, timeout=0.5), "ready-tls")


def test_ready_made_asyncio_clients(three: list[Server]) -> None:
    async def test() -> None:
        clients = [redis.asyncio.Redis(port=s.port, decode_responses=True) for s in three]
        async with dlock.asyncio.LockManager(clients, timeout=0.5) as locks:
            lock = await locks.lock("ready-async", ttl=5.0, wait=1.0)
            waiter = asyncio.ensure_future(locks.lock("ready-async", ttl=5.0, wait=5.0))
            await asyncio.sleep(0.1)  # queued on the nodes
            await lock.release()
            handed = await asyncio.wait_for(waiter, 5.0)
            assert await handed.token() > await lock.token()
            await handed.release()
        for client in clients:
            await client.aclose()

    asyncio.run(test())
    assert free_everywhere(three, "ready-async")


def test_a_client_of_the_other_flavour_or_a_cluster_client_is_refused() -> None:
    with pytest.raises(TypeError, match=r"this LockManager takes redis\.client\.Redis clients"):
        dlock.LockManager([redis.asyncio.Redis()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"this LockManager takes redis\.asyncio\.client\.Redis clients"):
        dlock.asyncio.LockManager([redis.Redis()])  # type: ignore[list-item]
    cluster = redis.asyncio.RedisCluster(host="127.0.0.1", port=1)  # connects only when used
    for manager in (dlock.LockManager, dlock.asyncio.LockManager):
        with pytest.raises(TypeError, match=r"give its URL as redis\+cluster://host:port"):
            manager([cluster])  # type: ignore[list-item]
    client = redis.Redis(port=1)
    with pytest.raises(ValueError, match="is given twice"):
        dlock.LockManager([client, "redis://localhost:1"])
