"""Sets (lock_all / try_lock_all): several resources held all or nothing under one token, on
three real nodes, through the same engine as a lock (DLOCK.ACQUIREALL and its kin)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from cluster import Server
from conftest import eventually, free_everywhere, status, urls, waiters

import dlock
import dlock.asyncio

SLOW_OK = 0.5


def manager(servers: list[Server], **options: object) -> dlock.LockManager:
    return dlock.LockManager(urls(servers), timeout=SLOW_OK, **options)  # type: ignore[arg-type]


def free(servers: list[Server], *keys: str) -> bool:
    return all(free_everywhere(servers, key) for key in keys)


@pytest.mark.timeout(10)
def test_bad_sets_are_refused_before_anything_is_sent() -> None:
    locks = dlock.LockManager(["redis://127.0.0.1:1"])  # nothing listens: no I/O may happen
    for resources, modes in [([], None), (["a", "b", "a"], None), ([f"k{i}" for i in range(17)], None)]:
        with pytest.raises(ValueError):
            locks.try_lock_all(resources, modes=modes)
    with pytest.raises(ValueError):
        locks.lock_all(["a", "b"], modes=["x"])
    with pytest.raises(ValueError):
        locks.lock_all(["a", "b"], modes=["x", "p"])
    with pytest.raises(TypeError):
        locks.try_lock_all("ab")


@pytest.mark.timeout(30)
def test_a_set_is_held_whole_under_one_token_and_released_whole(three: list[Server]) -> None:
    locks = manager(three)
    held = locks.try_lock_all(["a", "b", "c"], ttl=10.0)
    assert held.resources == ("a", "b", "c")
    token = held.token()  # commits: FENCEALL on the nodes holding it
    for key in "abc":
        views = [status(s, key) for s in three]
        assert sum(1 for v in views if v is not None and v["owner"] == held.owner and v["token"] == token) >= 2
    held.extend(5.0)
    assert 4.0 < held.validity <= 5.0
    held.release()
    assert free(three, "a", "b", "c")


@pytest.mark.timeout(30)
def test_a_member_held_by_another_fails_the_set_and_nothing_is_held(three: list[Server]) -> None:
    locks = manager(three)
    other = locks.try_lock("b", ttl=10.0)
    with pytest.raises(dlock.LockContended):
        locks.try_lock_all(["a", "b", "c"], ttl=10.0)
    for server in three:
        assert status(server, "a") is None and status(server, "c") is None
        assert status(server, "b")["owner"] == other.owner  # type: ignore[index]
    other.release()
    assert free(three, "a", "b", "c")


@pytest.mark.timeout(30)
def test_lock_all_waits_and_is_granted_when_the_blocker_releases(three: list[Server]) -> None:
    locks = manager(three)
    blocker = locks.try_lock("b", ttl=10.0)
    got: list[dlock.Lock] = []
    waiter = threading.Thread(target=lambda: got.append(locks.lock_all(["a", "b"], ttl=10.0, wait=10.0)))
    waiter.start()
    eventually(lambda: all(waiters(s, "b") for s in three), what="the set queued on b")
    assert all(status(s, "a") is None for s in three)  # queued: holding nothing meanwhile
    blocker.release()
    waiter.join(10.0)
    assert got and got[0].resources == ("a", "b")
    token = got[0].token()
    assert sum(1 for s in three if (status(s, "a") or {}).get("token") == token) >= 2
    got[0].release()
    assert free(three, "a", "b")


@pytest.mark.timeout(60)
def test_sets_in_opposite_orders_never_deadlock_nor_overlap(three: list[Server]) -> None:
    locks = manager(three)
    inside: list[str] = []
    overlaps: list[str] = []
    done = [0, 0]
    guard = threading.Lock()

    def worker(index: int, order: list[str]) -> None:
        for _ in range(25):
            with locks.lock_all(order, ttl=5.0, wait=20.0) as held:
                held.token()
                with guard:
                    if inside:
                        overlaps.append(f"{order} while {inside}")
                    inside.append(",".join(order))
                time.sleep(0.001)
                with guard:
                    inside.pop()
            done[index] += 1

    threads = [threading.Thread(target=worker, args=(i, o)) for i, o in enumerate([["a", "b"], ["b", "a"]])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50.0)
    assert done == [25, 25] and not overlaps
    assert free(three, "a", "b")


@pytest.mark.timeout(30)
def test_a_set_missing_a_member_everywhere_is_lost_at_extend(three: list[Server]) -> None:
    locks = manager(three)
    held = locks.try_lock_all(["a", "b"], ttl=10.0)
    held.token()
    for server in three:
        server.client().delete("b")
    with pytest.raises(dlock.LockLost):
        held.extend()
    for server in three:  # the node gave back the members still held
        assert status(server, "a") is None
    held.release()


@pytest.mark.timeout(30)
def test_the_watchdog_sees_a_set_lost(three: list[Server]) -> None:
    locks = manager(three, extend_interval=0.05)
    held = locks.try_lock_all(["a", "b"], ttl=1.0, watchdog=True)
    held.token()
    for server in three:
        server.client().delete("a")
    eventually(lambda: held.lost.is_set(), what="the loss seen")
    with pytest.raises(dlock.LockLost):
        held.__exit__(None, None, None)


@pytest.mark.timeout(30)
def test_shared_members_are_shared_and_a_guarded_write_takes_the_set_token(three: list[Server]) -> None:
    locks = manager(three)
    one = locks.try_lock_all(["acct", "ledger"], ttl=10.0, modes=["x", "s"])
    two = locks.try_lock_all(["other", "ledger"], ttl=10.0, modes="xs")
    with pytest.raises(dlock.LockContended):
        locks.try_lock_all(["ledger"], ttl=10.0)  # exclusive: the readers hold it
    client = three[0].client()
    assert one.guarded(client, "gate", "SET", "k", "v") == b"OK"
    assert int(client.execute_command("DLOCK.CHECK", "gate", one.token())) == 1
    one.release()
    two.release()
    assert free(three, "acct", "ledger", "other")


@pytest.mark.timeout(30)
def test_asyncio_sets(three: list[Server]) -> None:
    async def test() -> None:
        async with dlock.asyncio.LockManager(urls(three), timeout=SLOW_OK) as locks:
            async with locks.lock_all(["a", "b"], ttl=10.0, wait=1.0) as held:
                assert held.resources == ("a", "b")
                token = await held.token()
                assert sum(1 for s in three if (status(s, "b") or {}).get("token") == token) >= 2
                with pytest.raises(dlock.LockContended):
                    await locks.try_lock_all(["b", "c"], ttl=10.0)
                assert all(status(s, "c") is None for s in three)
            assert free(three, "a", "b", "c")
            held2 = await locks.try_lock_all(["b", "c"], ttl=10.0)
            await held2.release()

    asyncio.run(test())
