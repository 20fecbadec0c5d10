"""Cross-slot sets on a real Redis Cluster (3 masters + 3 replicas, the session's `redis_cluster`):
a set whose keys span slots is taken slot group by slot group in slot order (docs/multi.md,
"Redis Cluster"), each group a set of its own on the master serving its slot."""

from __future__ import annotations

import asyncio
import threading

import pytest
from cluster import Cluster
from conftest import eventually, status

import dlock
import dlock.asyncio
from dlock._pure.sets import groups

#: As test_cluster.py: a replica's acknowledgement on a loaded machine can miss 100 ms.
ACK_TIMEOUT = 2.0
#: Three slot groups, two of them of two keys (a hash tag each), on different slots.
KEYS = ["{xs-b}:2", "{xs-a}:1", "{xs-c}:1", "{xs-a}:2", "{xs-b}:1"]


def manager(cluster: Cluster) -> dlock.LockManager:
    return dlock.LockManager([cluster.url()], ack_timeout=ACK_TIMEOUT, timeout=0.5)


def free(cluster: Cluster, keys: list[str]) -> bool:
    return all(status(cluster.master_for(key), key) is None for key in keys)


@pytest.mark.timeout(60)
def test_a_cross_slot_set_is_held_whole_with_a_token_per_group_and_released_whole(redis_cluster: Cluster) -> None:
    assert len(groups(KEYS)) == 3
    with manager(redis_cluster) as locks:
        held = locks.try_lock_all(KEYS, ttl=10.0)
        assert isinstance(held, dlock.CrossSlotSet)
        assert held.resources == tuple(KEYS)
        assert [list(group.resources) for group in held.groups] == groups(KEYS)  # slot order
        tokens = held.tokens()
        assert len(tokens) == len(KEYS)
        owners = {key: group.owner for group in held.groups for key in group.resources}
        for key, token in zip(KEYS, tokens, strict=True):
            view = status(redis_cluster.master_for(key), key)
            assert view is not None and view["owner"] == owners[key] and view["token"] == token
        assert tokens[KEYS.index("{xs-a}:1")] == tokens[KEYS.index("{xs-a}:2")]  # one group, one token
        with pytest.raises(ValueError, match=r"a set across 3 slots has one token per slot group: use tokens\(\)"):
            held.token()
        held.extend(5.0)
        assert 4.0 < held.validity <= 5.0
        held.release()
        held.release()  # idempotent
        assert free(redis_cluster, KEYS)
        one_slot = locks.try_lock_all(["{xs-a}:1", "{xs-a}:2"], ttl=10.0)  # one group: a Lock, as before
        assert isinstance(one_slot, dlock.Lock)
        one_slot.release()


@pytest.mark.timeout(60)
def test_a_later_group_held_by_another_fails_the_set_and_frees_the_earlier_groups(redis_cluster: Cluster) -> None:
    last = groups(KEYS)[-1][0]
    with manager(redis_cluster) as locks:
        blocker = locks.try_lock(last, ttl=10.0)
        with pytest.raises(dlock.LockContended) as contended:
            locks.try_lock_all(KEYS, ttl=10.0)
        assert not isinstance(contended.value, dlock.LockTimeout)
        assert free(redis_cluster, [key for key in KEYS if key != last])
        with pytest.raises(dlock.LockTimeout):
            locks.lock_all(KEYS, ttl=10.0, wait=0.3)  # the one wait of the whole call
        assert free(redis_cluster, [key for key in KEYS if key != last])
        blocker.release()
        with locks.lock_all(KEYS, ttl=10.0, wait=2.0) as held:
            assert isinstance(held, dlock.CrossSlotSet)
        assert free(redis_cluster, KEYS)


@pytest.mark.timeout(90)
def test_cross_slot_sets_in_opposite_orders_never_deadlock_nor_overlap(redis_cluster: Cluster) -> None:
    keys = ["{xs-p}", "{xs-q}", "{xs-r}"]
    inside = 0
    overlaps: list[int] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def worker(order: list[str]) -> None:
        nonlocal inside
        try:
            with manager(redis_cluster) as locks:
                for _ in range(15):
                    with locks.lock_all(order, ttl=5.0, wait=20.0):
                        with guard:
                            inside += 1
                            overlaps.append(inside)
                        threading.Event().wait(0.005)
                        with guard:
                            inside -= 1
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(order,)) for order in (keys, keys[::-1], keys[1:] + keys[:1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=80)
    assert not any(thread.is_alive() for thread in threads), "deadlocked"
    assert not errors, errors
    assert len(overlaps) == 45 and max(overlaps) == 1
    assert free(redis_cluster, keys)


@pytest.mark.timeout(60)
def test_a_group_lost_makes_extend_raise_lost_and_the_others_are_released(redis_cluster: Cluster) -> None:
    with manager(redis_cluster) as locks:
        held = locks.try_lock_all(KEYS, ttl=10.0)
        held.tokens()
        gone = groups(KEYS)[1][0]
        redis_cluster.master_for(gone).client().delete(gone)
        with pytest.raises(dlock.LockLost):
            held.extend()
        assert held.lost.is_set()
        assert free(redis_cluster, KEYS)
        held.release()


@pytest.mark.timeout(60)
def test_the_watchdog_sees_a_group_lost_and_releases_the_others(redis_cluster: Cluster) -> None:
    with dlock.LockManager([redis_cluster.url()], ack_timeout=ACK_TIMEOUT, timeout=0.5, extend_interval=0.05) as locks:
        held = locks.try_lock_all(KEYS, ttl=2.0, watchdog=True)
        held.tokens()
        gone = groups(KEYS)[0][0]
        redis_cluster.master_for(gone).client().delete(gone)
        eventually(lambda: held.lost.is_set(), what="the loss seen")
        eventually(lambda: free(redis_cluster, KEYS), what="the other groups released")
        with pytest.raises(dlock.LockLost):
            held.__exit__(None, None, None)


@pytest.mark.timeout(60)
def test_asyncio_cross_slot_sets(redis_cluster: Cluster) -> None:
    async def test() -> None:
        async with dlock.asyncio.LockManager([redis_cluster.url()], ack_timeout=ACK_TIMEOUT, timeout=0.5) as locks:
            async with locks.lock_all(KEYS, ttl=10.0, wait=2.0) as held:
                assert isinstance(held, dlock.asyncio.CrossSlotSet)
                tokens = await held.tokens()
                assert all(
                    status(redis_cluster.master_for(k), k)["token"] == t for k, t in zip(KEYS, tokens, strict=True)
                )  # type: ignore[index]
                with pytest.raises(dlock.LockContended):
                    await locks.try_lock_all(["{xs-c}:1", "{xs-z}"], ttl=10.0)
                assert status(redis_cluster.master_for("{xs-z}"), "{xs-z}") is None
            assert free(redis_cluster, KEYS)

    asyncio.run(test())
