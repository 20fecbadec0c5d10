"""The asyncio client on a Redis Cluster node: the main routing and acknowledgement paths of
test_cluster.py (routing from a seed that does not own the slot, a migrated slot, a server-side
wait, a paused replica)."""

from __future__ import annotations

import asyncio

import pytest
from cluster import Cluster, Server
from conftest import status, waiters
from test_async import run, until
from test_cluster import ACK_TIMEOUT, SHORTFALL, asking_count, paused

import dlock
from dlock.asyncio import LockManager


def test_async_lock_extend_release_through_a_seed_that_does_not_own_the_slot(redis_cluster: Cluster) -> None:
    seed = redis_cluster.nodes[0]
    key = redis_cluster.key_not_on(seed, "async-routed")
    owner = redis_cluster.master_for(key)

    async def test() -> None:
        async with (
            LockManager([redis_cluster.url(seed)], ack_timeout=ACK_TIMEOUT) as locks,
            locks.lock(key, ttl=2.0, wait=1.0) as lock,
        ):
            held = status(owner, key)
            assert held is not None and held["token"] == await lock.token()
            await lock.extend(ttl=30.0)
            assert int(str(status(owner, key)["ttl"])) > 20_000  # type: ignore[index]
        assert status(owner, key) is None

    run(test)


def test_async_follows_a_migrated_slot(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "async-migrating")
    source = redis_cluster.master_for(key)
    target = redis_cluster.other_master(source)
    asked_before = asking_count(target)

    async def test() -> None:
        async with LockManager([redis_cluster.url()], timeout=0.5, ack_timeout=ACK_TIMEOUT) as locks:
            lock = await locks.try_lock(key, ttl=30.0)
            loop = asyncio.get_running_loop()

            def in_the_ask_window() -> None:
                """Runs in the migrating thread; the extend runs on the loop, which stays free."""
                asyncio.run_coroutine_threadsafe(lock.extend(ttl=20.0), loop).result(5)

            await asyncio.to_thread(redis_cluster.migrate_slot, key, source, target, in_the_ask_window)
            assert asking_count(target) > asked_before
            await lock.extend(ttl=30.0)  # MOVED: the map is read again
            held = status(target, key)
            assert held is not None and held["token"] == await lock.token() and int(str(held["ttl"])) > 20_000
            await lock.release()
            assert status(target, key) is None

    run(test)


def test_async_server_side_wait_on_a_cluster_node(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "async-waited")
    owner = redis_cluster.master_for(key)

    async def test() -> None:
        async with LockManager([redis_cluster.url()], ack_timeout=ACK_TIMEOUT) as locks:
            holder = await locks.try_lock(key, ttl=30.0)
            waiting = asyncio.ensure_future(locks.lock(key, ttl=5.0, wait=10.0))
            await until(lambda: len(waiters(owner, key)) == 1)
            await holder.release()
            lock = await asyncio.wait_for(waiting, 5)
            assert await lock.token() > await holder.token()  # one node: nothing owed
            await lock.release()

    run(test)


def test_async_paused_replica_refuses_grants(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "async-acked")
    owner = redis_cluster.master_for(key)

    async def test() -> None:
        async with (
            LockManager([redis_cluster.url()]) as acked,
            LockManager([redis_cluster.url()], replica_ack="off") as unacked,
        ):
            with paused(redis_cluster.replica_of(owner), owner):
                with pytest.raises(dlock.NoQuorum, match=SHORTFALL):
                    await acked.try_lock(key)
                assert status(owner, key) is None
                with pytest.raises(dlock.NoQuorum, match=SHORTFALL):
                    await acked.lock(key, wait=0.3)  # the waiting path acknowledges too
                assert status(owner, key) is None
                lock = await unacked.try_lock(key)
                await lock.release()

    run(test)


def test_async_plain_master_with_replica_ack_1(master_with_replica: tuple[Server, Server]) -> None:
    master, replica = master_with_replica

    async def test() -> None:
        async with LockManager([master.url], replica_ack=1) as locks:
            with paused(replica, master), pytest.raises(dlock.NoQuorum, match=SHORTFALL):
                await locks.try_lock("plain-acked")
        async with (
            LockManager([master.url], replica_ack=1, ack_timeout=ACK_TIMEOUT) as patient,
            patient.try_lock("plain-acked") as lock,
        ):
            await lock.extend()

    run(test)
