"""Atomic slot migration (Redis 8.4+ `CLUSTER MIGRATION IMPORT`, Valkey 9+ `CLUSTER
MIGRATESLOTS`), sync and asyncio: a wait queued on the slot's old owner is answered MOVED when the
slot leaves, queues on the new owner and is granted there when the holder releases. Needs the
newest servers (`make compat` runs it on them); skipped elsewhere."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from cluster import Cluster, Server, start
from conftest import eventually

import dlock
import dlock.asyncio

KEY = "orders:{m}:1"


def atomic_migration(server: Server) -> str | None:
    """'redis' or 'valkey' where the server migrates slots atomically, else None."""
    info = server.client().info("server")
    if info.get("server_name") == "valkey":
        return "valkey" if int(str(info.get("valkey_version", "0")).split(".")[0]) >= 9 else None
    major, minor = (int(p) for p in str(info["redis_version"]).split(".")[:2])
    return "redis" if (major, minor) >= (8, 4) else None


@pytest.fixture
def cluster() -> Iterator[tuple[Cluster, str]]:
    probe = start(1)[0]
    kind = atomic_migration(probe)
    probe.stop()
    if kind is None:
        pytest.skip("this server has no atomic slot migration (Redis 8.4+, Valkey 9+)")
    cluster = Cluster(masters=3, replicas=0).start()
    try:
        yield cluster, kind
    finally:
        cluster.stop()


def migrate(cluster: Cluster, kind: str, source: Server, target: Server) -> None:
    """Moves KEY's slot from source to target and returns once the migration completed."""
    slot = int(source.client().execute_command("CLUSTER", "KEYSLOT", KEY))
    if kind == "redis":
        task = target.client().execute_command("CLUSTER", "MIGRATION", "IMPORT", slot, slot)
        status = ("MIGRATION", "STATUS", "ID", task)
        on, ended = target, b"completed"
    else:
        target_id = target.client().execute_command("CLUSTER", "MYID")
        source.client().execute_command("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", target_id)
        status = ("GETSLOTMIGRATIONS",)
        on, ended = source, b"success"
    eventually(lambda: ended in flat(on.client().execute_command("CLUSTER", *status)), what="the migration")


def flat(reply: object) -> list[object]:
    if isinstance(reply, list):
        return [item for part in reply for item in flat(part)]
    return [reply]


def waiting_on(server: Server) -> int:
    return int(server.client().info("dlock")["dlock_waiters"])


def test_a_queued_wait_follows_the_slot_to_its_new_owner(cluster: tuple[Cluster, str]) -> None:
    nodes, kind = cluster
    source = nodes.master_for(KEY)
    target = next(n for n in nodes.nodes[:3] if n is not source)
    with dlock.LockManager([nodes.url()], replica_ack="off") as locks:
        holder = locks.try_lock(KEY, ttl=30.0)
        got: list[dlock.Lock] = []
        waiter = threading.Thread(target=lambda: got.append(locks.lock(KEY, ttl=10.0, wait=20.0)))
        waiter.start()
        try:
            eventually(lambda: waiting_on(source) == 1, what="the waiter queued on the old owner")
            migrate(nodes, kind, source, target)
            eventually(lambda: waiting_on(target) == 1, what="the waiter queued on the new owner")
            assert waiting_on(source) == 0
            released = time.monotonic()
            holder.release()
            waiter.join(10)
        finally:
            waiter.join(10)
        assert got and got[0].token() > holder.token()
        assert time.monotonic() - released < 5.0
        got[0].release()


def test_a_queued_asyncio_wait_follows_the_slot_to_its_new_owner(cluster: tuple[Cluster, str]) -> None:
    nodes, kind = cluster
    source = nodes.master_for(KEY)
    target = next(n for n in nodes.nodes[:3] if n is not source)

    async def scenario() -> None:
        async with dlock.asyncio.LockManager([nodes.url()], replica_ack="off") as locks:
            holder = await locks.try_lock(KEY, ttl=30.0)
            waiter = asyncio.ensure_future(locks.lock(KEY, ttl=10.0, wait=20.0))
            await asyncio.to_thread(eventually, lambda: waiting_on(source) == 1, what="queued on the old owner")
            await asyncio.to_thread(migrate, nodes, kind, source, target)
            await asyncio.to_thread(eventually, lambda: waiting_on(target) == 1, what="queued on the new owner")
            await holder.release()
            lock = await asyncio.wait_for(waiter, 5.0)
            assert await lock.token() > await holder.token()
            await lock.release()

    asyncio.run(scenario())
