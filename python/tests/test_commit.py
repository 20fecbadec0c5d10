"""The commit a no-wait hold owes until its token is read (_pure/commit.py, conformance/commits.json),
against real nodes, sync and asyncio: try_lock (and lock() in retry mode) sends no FENCE until the
token is read; one commit round, whoever reads and however often; the token read is the one the
nodes store; a commit that fails loses the lock; guarded writes, detach and a campaign read the
token that way; a queued lock() commits while it acquires, as before; an extension (a caller's or
the watchdog's) racing the commit leaves the validity the nodes hold (the lease's writes go one
at a time); a lost commit gives the hold back."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import redis.asyncio as aioredis
from cluster import Server, start
from conftest import status, urls

import dlock
import dlock.asyncio


def fences(servers: list[Server]) -> int:
    """DLOCK.FENCE calls on these nodes so far (INFO commandstats)."""
    stats = [s.client().info("commandstats").get("cmdstat_dlock.fence", {}) for s in servers]
    return sum(int(stat.get("calls", 0)) for stat in stats)


def tokens(servers: list[Server], key: str) -> list[object]:
    """The token each node holds `key` with (None: free there)."""
    return [(status(s, key) or {}).get("token") for s in servers]


def manager(servers: list[Server], **options: object) -> dlock.LockManager:
    return dlock.LockManager(urls(servers), timeout=0.5, **options)  # type: ignore[arg-type]


@pytest.mark.timeout(60)
def test_try_lock_sends_no_fence_until_the_token_is_read(three: list[Server]) -> None:
    locks = manager(three)
    locks.try_lock("r", ttl=10.0).release()
    assert fences(three) == 0, "held and released without its token read: nothing committed"
    lock = locks.try_lock("r", ttl=10.0)
    assert fences(three) == 0 and "(uncommitted)" in repr(lock)
    token = lock.token()
    assert fences(three) == 3, "one FENCE on each node that granted"
    assert tokens(three, "r") == [token] * 3, "the token read is the one the nodes store"
    assert lock.token() == token and fences(three) == 3, "read again: no second round"
    assert f"token={token}" in repr(lock)
    lock.release()


@pytest.mark.timeout(60)
def test_two_readers_at_once_share_one_commit(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=10.0)
    together = threading.Barrier(2)
    read: list[int] = []

    def reader() -> None:
        together.wait()
        read.append(lock.token())

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(read) == 2 and read[0] == read[1]
    assert fences(three) == 3, "one commit round for both readers"
    lock.release()


@pytest.mark.timeout(60)
def test_a_commit_that_fails_loses_the_lock_and_says_so_again_without_a_fence(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=10.0, watchdog=True)
    told = threading.Event()
    listener = threading.Thread(target=lambda: lock.lost.wait(10) and told.set())
    listener.start()
    for server in three[:2]:
        assert server.client().delete("r") == 1  # no longer held there: its FENCE is refused
    with pytest.raises(dlock.LockLost):
        lock.token()
    listener.join(timeout=10)
    assert lock.lost.is_set() and told.is_set(), "lost, and those watching told"
    assert lock.validity == 0.0 and "(uncommitted)" in repr(lock)
    sent = fences(three)
    assert sent == 3
    with pytest.raises(dlock.LockLost):
        lock.token()
    assert fences(three) == sent, "the outcome remembered: no second FENCE"
    lock.release()


@pytest.mark.timeout(60)
def test_validity_over_when_read_is_a_loss_without_a_fence(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=0.2)
    time.sleep(0.3)
    with pytest.raises(dlock.LockLost):
        lock.token()
    assert lock.lost.is_set() and fences(three) == 0


@pytest.mark.timeout(60)
def test_the_commit_counts_validity_from_its_own_start(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=2.0)
    time.sleep(0.6)
    assert lock.validity < 1.5
    lock.token()
    assert lock.validity > 1.6, "the lease set afresh by FENCE ... PX 2000 (not 1.4 s left)"
    assert all(int(str((status(s, "r") or {})["ttl"])) > 1600 for s in three)
    lock.release()


@pytest.mark.timeout(60)
def test_the_commit_sets_the_ttl_of_the_last_extension(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=2.0)
    lock.extend(30.0)
    lock.token()
    assert lock.validity > 29.0
    assert all(int(str((status(s, "r") or {})["ttl"])) > 29_000 for s in three)
    lock.release()


@pytest.mark.timeout(60)
def test_guarded_commits_first(three: list[Server]) -> None:
    data = start(1)[0]
    try:
        lock = manager(three).try_lock("r", ttl=10.0)
        assert lock.guarded(data.client(), "gate", "SET", "k", "v") == b"OK"
        assert fences(three) == 3
        token = lock.token()
        assert tokens(three, "r") == [token] * 3 and fences(three) == 3
        lock.release()
    finally:
        data.stop()


@pytest.mark.timeout(60)
def test_a_queued_lock_commits_while_it_acquires(three: list[Server]) -> None:
    lock = manager(three).lock("r", ttl=10.0, wait=5.0)
    sent = fences(three)
    assert sent >= 2, "committed on the quorum that granted before it was held"
    token = lock.token()
    assert tokens(three, "r").count(token) >= 2 and fences(three) == sent, "nothing more to send"
    lock.release()


@pytest.mark.timeout(60)
def test_retry_mode_owes_the_commit_one_node_and_fencing_off_do_not(three: list[Server], one: Server) -> None:
    retrying = manager(three, wait_mode="retry").lock("r", ttl=10.0, wait=5.0)
    assert fences(three) == 0
    token = retrying.token()
    assert tokens(three, "r") == [token] * 3 and fences(three) == 3
    retrying.release()
    unfenced = manager(three, fencing=False).try_lock("u", ttl=10.0)
    assert unfenced.token() > 0 and fences(three) == 3, "fencing off: the largest grant, nothing sent"
    unfenced.release()
    alone = manager([one]).try_lock("r", ttl=10.0)
    assert alone.token() == (status(one, "r") or {})["token"] and fences([one]) == 0
    alone.release()


@pytest.mark.timeout(60)
def test_detach_and_a_campaign_in_retry_mode_read_the_token_committed(three: list[Server]) -> None:
    locks = manager(three, wait_mode="retry")
    owner, token, _ = locks.try_lock("r", ttl=10.0).detach()
    assert fences(three) == 3 and tokens(three, "r") == [token] * 3
    assert locks.release_owner("r", owner) == 3
    leading = locks.campaign("jobs", "a", ttl=10.0)
    assert fences(three) == 6, "committed before it leads"
    assert tokens(three, "jobs") == [leading.epoch] * 3
    leading.resign()


@pytest.mark.timeout(60)
def test_asyncio_readers_share_one_commit_a_cancelled_one_too(three: list[Server]) -> None:
    async def test() -> None:
        async with dlock.asyncio.LockManager(urls(three), timeout=0.5) as locks:
            lock = await locks.try_lock("r", ttl=10.0)
            assert fences(three) == 0
            first = asyncio.ensure_future(lock.token())
            await asyncio.sleep(0)  # the commit is under way
            first.cancel()
            a, b = await asyncio.gather(lock.token(), lock.token())
            assert a == b == await lock.token()
            assert fences(three) == 3, "one round: the cancelled reader's commit went on, shared"
            assert tokens(three, "r") == [a] * 3
            owner, token, _ = await lock.detach()
            assert token == a and await locks.release_owner("r", owner) == 3

    asyncio.run(test())


@pytest.mark.timeout(60)
def test_asyncio_a_failed_commit_loses_the_lock_and_guarded_commits_first(three: list[Server]) -> None:
    data = start(1)[0]

    async def test() -> None:
        async with dlock.asyncio.LockManager(urls(three), timeout=0.5) as locks:
            lock = await locks.try_lock("r", ttl=10.0)
            told = asyncio.ensure_future(lock.lost.wait())
            for server in three[1:]:
                assert server.client().delete("r") == 1
            with pytest.raises(dlock.LockLost):
                await lock.token()
            await asyncio.wait_for(told, 5)
            with pytest.raises(dlock.LockLost):
                await lock.token()
            assert fences(three) == 3
            await lock.release()
            fresh = await locks.try_lock("r", ttl=10.0)
            client = aioredis.Redis(port=data.port, protocol=2)
            assert await fresh.guarded(client, "gate", "SET", "k", "v") == b"OK"
            token = await fresh.token()
            assert fences(three) == 6 and tokens(three, "r") == [token] * 3
            await client.aclose()
            await fresh.release()

    try:
        asyncio.run(test())
    finally:
        data.stop()


def node_ttls(servers: list[Server], key: str) -> list[float]:
    """Seconds each node still holds `key` for (0: free there)."""
    return [int(str((status(s, key) or {}).get("ttl", 0))) / 1000 for s in servers]


@pytest.mark.timeout(60)
def test_an_extension_racing_the_commit_leaves_the_validity_the_nodes_hold(
    three: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The adversary's F1: the commit's FENCE ... PX 10000 reaches the nodes, then an EXTEND ...
    # 500 (the nodes hold 0.5 s), but the FENCE's replies come back last (a slow path: held here
    # 0.4 s). The lease's writes going one at a time, the extension waits for the commit.
    lock = dlock.LockManager(urls(three), timeout=2.0).try_lock("r", ttl=10.0)
    fence = lock._calls.fence

    def slow_fence(*args: Any) -> list[dlock.NodeFailure | None]:
        replies = fence(*args)
        time.sleep(0.4)
        return replies

    monkeypatch.setattr(lock._calls, "fence", slow_fence)
    read: list[int] = []
    reader = threading.Thread(target=lambda: read.append(lock.token()))
    reader.start()
    time.sleep(0.1)  # the FENCEs have landed; their replies are on their way
    lock.extend(0.5)
    reader.join(timeout=10)
    assert read and not lock.lost.is_set()
    nodes = min(node_ttls(three, "r"))  # read first: the validity read after is less
    assert lock.validity <= nodes + 0.005, "never more than the nodes give"
    lock.release()


@pytest.mark.timeout(60)
def test_asyncio_an_extension_racing_the_commit_leaves_the_validity_the_nodes_hold(
    three: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test() -> None:
        async with dlock.asyncio.LockManager(urls(three), timeout=2.0) as locks:
            lock = await locks.try_lock("r", ttl=10.0)
            fence = lock._calls.fence

            async def slow_fence(*args: Any) -> list[dlock.NodeFailure | None]:
                replies = await fence(*args)
                await asyncio.sleep(0.4)
                return replies

            monkeypatch.setattr(lock._calls, "fence", slow_fence)
            reader = asyncio.ensure_future(lock.token())
            await asyncio.sleep(0.1)
            await lock.extend(0.5)
            await reader
            assert not lock.lost.is_set()
            nodes = min(node_ttls(three, "r"))  # read first: the validity read after is less
            assert lock.validity <= nodes + 0.005, "never more than the nodes give"
            await lock.release()

    asyncio.run(test())


@pytest.mark.timeout(60)
def test_the_watchdog_extending_during_the_commit_leaves_the_validity_the_nodes_hold(
    three: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No thread of the caller's: the watchdog extends with the acquire's 2 s while the commit
    # sets the 30 s of the last extend().
    lock = manager(three, extend_interval=0.05).try_lock("r", ttl=2.0)
    lock.extend(30.0)
    fence = lock._calls.fence

    def slow_fence(*args: Any) -> list[dlock.NodeFailure | None]:
        replies = fence(*args)
        time.sleep(0.2)
        return replies

    monkeypatch.setattr(lock._calls, "fence", slow_fence)
    lock.start_watchdog()
    lock.token()
    assert not lock.stop_watchdog()
    nodes = min(node_ttls(three, "r"))  # read first: the validity read after is less
    assert lock.validity <= nodes + 0.005, "never more than the nodes give"
    lock.release()


@pytest.mark.timeout(60)
def test_a_lost_commit_gives_the_hold_back(three: list[Server]) -> None:
    lock = manager(three).try_lock("r", ttl=10.0)
    for server in three[:2]:
        assert server.client().delete("r") == 1
    with pytest.raises(dlock.LockLost):
        lock.token()
    assert status(three[2], "r") is None, "released where it was still held, not kept a whole TTL"

    async def test() -> None:
        async with dlock.asyncio.LockManager(urls(three), timeout=0.5) as locks:
            lock = await locks.try_lock("a", ttl=10.0)
            for server in three[1:]:
                assert server.client().delete("a") == 1
            with pytest.raises(dlock.LockLost):
                await lock.token()
            assert status(three[0], "a") is None

    asyncio.run(test())
