"""The asyncio API against real nodes: the same paths as the sync tests, and cancellation (inside
`async with`, and while waiting) leaving nothing on the nodes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from cluster import Server
from conftest import free_everywhere, status, urls, waiters

import dlock
from dlock.asyncio import Lock, LockManager


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())  # type: ignore[arg-type]


async def until(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Waits for a state of the nodes (they push nothing we could await), failing after `within`."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the nodes"
        await asyncio.sleep(0.005)


def manager(servers: list[Server], **options: object) -> LockManager:
    return LockManager(urls(servers), timeout=0.5, **options)  # type: ignore[arg-type]


def test_async_with_acquires_and_releases(five: list[Server]) -> None:
    async def test() -> None:
        async with manager(five) as locks, locks.lock("r", ttl=10.0, wait=1.0) as lock:
            assert isinstance(lock, Lock)
            tokens = [status(s, "r")["token"] for s in five]  # type: ignore[index]
            # Committed on a majority; a node whose wait answered after the commit keeps its own
            # (uncommitted) token until the release, as with the Rust client.
            assert tokens.count(await lock.token()) >= 3
        assert free_everywhere(five, "r")

    run(test)


def test_await_try_lock_extend_release(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)
        lock = await locks.try_lock("r", ttl=2.0)
        with pytest.raises(dlock.LockContended):
            await locks.try_lock("r", ttl=2.0)
        await lock.extend(30.0)
        assert lock.validity > 29.0 and all(s.client().pttl("r") > 29_000 for s in five)
        await lock.release()
        await lock.release()
        assert free_everywhere(five, "r")
        await locks.close()

    run(test)


def test_lock_waits_for_the_release_and_times_out_cleanly(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)
        holder = await locks.try_lock("r", ttl=10.0)
        held = await holder.token()  # read while held: an uncommitted token is not read after the release
        started = time.monotonic()
        with pytest.raises(dlock.LockTimeout):
            await locks.lock("r", ttl=10.0, wait=0.4)
        assert 0.4 <= time.monotonic() - started < 1.5
        assert all(not waiters(s, "r") for s in five)
        waiting = asyncio.ensure_future(_take(locks))
        await until(lambda: all(len(waiters(s, "r")) == 1 for s in five))
        await holder.release()
        second = await waiting
        assert await second.token() > held
        await second.release()
        assert free_everywhere(five, "r")

    run(test)


async def _take(locks: LockManager) -> Lock:
    return await locks.lock("r", ttl=10.0, wait=10.0)


def test_cancelling_a_task_inside_async_with_releases_the_lock(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)
        entered = asyncio.Event()

        async def hold_forever() -> None:
            async with locks.lock("r", ttl=30.0, wait=1.0):
                entered.set()
                await asyncio.Event().wait()

        task = asyncio.ensure_future(hold_forever())
        await entered.wait()
        assert all(status(s, "r") is not None for s in five)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert free_everywhere(five, "r")  # released before the cancellation completed

    run(test)


def test_cancelling_a_waiting_lock_withdraws_the_wait(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)
        holder = await locks.try_lock("r", ttl=30.0)
        task = asyncio.ensure_future(_take(locks))
        await until(lambda: all(len(waiters(s, "r")) == 1 for s in five))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(not waiters(s, "r") for s in five)  # withdrawn before the cancellation completed
        await holder.release()
        assert free_everywhere(five, "r")  # nobody was granted it after the holder

    run(test)


def test_no_quorum_names_the_nodes_down(five: list[Server]) -> None:
    for server in five[:3]:
        server.kill()

    async def test() -> None:
        with pytest.raises(dlock.NoQuorum) as caught:
            await manager(five).lock("r", ttl=10.0, wait=0.3)
        assert sorted(f.node for f in caught.value.failures) == sorted(urls(five[:3]))

    run(test)


def test_watchdog_signals_loss_and_stops(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)
        with pytest.raises(dlock.LockLost):
            async with locks.lock("r", ttl=0.9, wait=1.0, watchdog=True) as lock:
                for server in five[:3]:
                    server.client().execute_command("DLOCK.FORCERELEASE", "r")
                await asyncio.wait_for(lock.lost.wait(), 3.0)
                assert lock._watchdog is not None
                await asyncio.wait_for(asyncio.shield(lock._watchdog), 1.0)  # it ended by itself

    run(test)


def test_watchdog_keeps_the_lock_and_with_lock_returns_the_output(five: list[Server]) -> None:
    async def test() -> None:
        locks = manager(five)

        async def work(lock: Lock) -> int:
            await asyncio.sleep(1.5)  # more than 3 TTLs
            assert not lock.lost.is_set()
            assert all(status(s, "r")["owner"] == lock.owner for s in five)  # type: ignore[index]
            return await lock.token()

        assert await locks.with_lock("r", work, ttl=0.45, wait=1.0) > 0
        assert free_everywhere(five, "r")

    run(test)


def test_max_hold_signals_loss(three: list[Server]) -> None:
    async def test() -> None:
        locks = manager(three, max_hold=0.4)
        lock = await locks.lock("r", ttl=0.9, wait=1.0, watchdog=True)
        started = time.monotonic()
        await asyncio.wait_for(lock.lost.wait(), 3.0)
        assert time.monotonic() - started < 1.5

    run(test)


def test_single_node_and_retry_mode(one: Server) -> None:
    async def test() -> None:
        locks = LockManager([one.url], timeout=0.5, wait_mode="retry")
        holder = await locks.try_lock("r", ttl=10.0)
        asyncio.get_running_loop().call_later(0.2, lambda: asyncio.ensure_future(holder.release()))
        async with locks.lock("r", ttl=10.0, wait=5.0) as lock:
            token = await lock.token()  # one node: nothing owed, the holder's read after its release too
            assert token > await holder.token() and token == status(one, "r")["token"]  # type: ignore[index]
        assert free_everywhere([one], "r")

    run(test)


def test_a_restarted_node_answers_on_a_fresh_connection(one: Server) -> None:
    async def test() -> None:
        locks = LockManager([one.url], timeout=0.5)
        lock = await locks.try_lock("r", ttl=30.0)
        one.restart()
        with pytest.raises(dlock.LockLost):  # it answered "not held" (data lost), not NoQuorum
            await lock.extend()
        async with locks.lock("r", ttl=5.0, wait=1.0) as again:
            assert status(one, "r")["owner"] == again.owner  # type: ignore[index]
        await locks.close()

    run(test)


def test_one_node_wait_keeps_its_deadline_and_a_cancelled_one_withdraws(one: Server) -> None:
    """One node waits in the caller's task (no ticket, no commit), as in the sync flavour."""

    async def test() -> None:
        locks = LockManager([one.url], timeout=0.5)
        holder = await locks.try_lock("r", ttl=10.0)
        started = time.monotonic()
        with pytest.raises(dlock.LockTimeout):
            await locks.lock("r", ttl=10.0, wait=0.3)
        assert 0.3 <= time.monotonic() - started < 1.2  # the client's deadline, not the node's hz tick
        assert not waiters(one, "r")
        task = asyncio.ensure_future(_take(locks))
        await until(lambda: len(waiters(one, "r")) == 1)
        assert waiters(one, "r")[0][1] is None  # no ticket with one node
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not waiters(one, "r")  # withdrawn before the cancellation completed
        assert status(one, "r")["owner"] == holder.owner  # type: ignore[index]
        waiting = asyncio.ensure_future(_take(locks))
        await until(lambda: len(waiters(one, "r")) == 1)
        await holder.release()
        second = await waiting
        assert await second.token() > await holder.token()
        await second.release()
        assert free_everywhere([one], "r")

    run(test)
