"""Observing an election against real nodes, sync and asyncio (docs/election.md, observe):
the leader first, then each change exactly once and in order: a resignation (none), another
candidate (the new leader), a proclamation (same epoch, new value), a frozen leader's lease
running out (none); too few nodes: a NoQuorum item. Skipped on a module without DLOCK.OBSERVE."""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
import time

import pytest
import redis
from cluster import Server
from conftest import urls
from test_election import LEASE, in_thread, manager

import dlock
import dlock.asyncio as adlock

WAIT = 5.0  # seconds a change may take (a lease running out: LEASE)


def observes(server: Server) -> bool:
    """Whether the module knows DLOCK.OBSERVE (redis-py cannot parse COMMAND INFO's nil)."""
    try:
        server.client().execute_command("DLOCK.OBSERVE", "probe", "TIMEOUT", 1)
    except redis.ResponseError as error:
        if "unknown command" in str(error).lower():
            return False
        raise
    return True


def skip_without_observe(servers: list[Server]) -> None:
    if not observes(servers[0]):
        pytest.skip("the module (DLOCK_MODULE) has no DLOCK.OBSERVE yet")


class Changes:
    """A sync observer read in a thread, so each change can be awaited with a timeout."""

    def __init__(self, observer: dlock.Observer) -> None:
        self.observer = observer
        self.changes: queue.Queue[object] = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        for change in self.observer:
            self.changes.put(change)

    def next(self, within: float = WAIT) -> object:
        try:
            return self.changes.get(timeout=within)
        except queue.Empty:
            raise AssertionError(f"no change within {within}s") from None

    def quiet(self, within: float) -> None:
        time.sleep(within)
        assert self.changes.empty(), f"an extra change: {self.changes.get()}"


def test_observe_sees_every_change_once_in_order(masters: list[Server]) -> None:
    skip_without_observe(masters)
    locks = manager(masters)
    a = locks.campaign("watched", "a", LEASE)
    changes = Changes(locks.observe("watched"))
    try:
        assert changes.next() == dlock.Leader(a.id, "a", a.epoch), "first: the current leader"
        a.resign()
        assert changes.next() is None, "a resignation nobody took over"
        b = locks.campaign("watched", "b", LEASE)
        assert changes.next() == dlock.Leader(b.id, "b", b.epoch)
        b.proclaim("b 2")
        assert changes.next() == dlock.Leader(b.id, "b 2", b.epoch), "a proclamation keeps the epoch"
        b._lock.detach()  # a frozen leader: nothing extends nor releases it
        frozen = time.monotonic()
        assert changes.next(within=LEASE + WAIT) is None, "the frozen leader's lease ran out"
        assert time.monotonic() - frozen < LEASE + 1.0
        changes.quiet(0.5)
    finally:
        changes.observer.close()


def test_observe_hands_a_no_quorum_item_when_too_few_answer(five: list[Server]) -> None:
    skip_without_observe(five)
    changes = Changes(manager(five, retry_delay=0.05).observe("watched"))
    try:
        assert changes.next() is None, "nobody leads"
        for server in five[:3]:
            server.kill()
        item = changes.next()
        assert isinstance(item, dlock.NoQuorum), item
        assert item.needed == 3
    finally:
        changes.observer.close()


def test_observe_shows_a_takeover_once_with_its_committed_epoch(five: list[Server]) -> None:
    """A handoff on five masters grants the next candidate on each node under the node's own
    token until FENCE raises them to the epoch: the observer holds such a leader back (its
    commit grace) rather than show it first with a smaller epoch, then the committed one."""
    skip_without_observe(five)
    a, b = manager(five), manager(five)
    changes = Changes(a.observe("watched"))
    try:
        assert changes.next() is None, "nobody leads"
        leader = a.campaign("watched", "0", LEASE)
        assert changes.next() == dlock.Leader(leader.id, "0", leader.epoch)
        for round_ in range(1, 6):
            waiting, elected = in_thread(functools.partial(b.campaign, "watched", str(round_), LEASE))
            time.sleep(0.2)  # queued behind the leader
            leader.resign()
            waiting.join(WAIT)
            leader = elected[0]
            assert isinstance(leader, dlock.Leadership), leader
            expected = dlock.Leader(leader.id, str(round_), leader.epoch)
            shown = changes.next()
            # Before the handoff: the resignation (None), or the old leader while its release
            # spreads (its epoch read from the nodes it is still on).
            while shown is None or (isinstance(shown, dlock.Leader) and shown.id != expected.id):
                shown = changes.next()
            assert shown == expected, f"round {round_}: one change, with the committed epoch"
            changes.quiet(0.5)
            a, b = b, a
        leader.resign()
    finally:
        changes.observer.close()


def test_asyncio_observe_sees_the_leader_a_takeover_and_a_proclamation(masters: list[Server]) -> None:
    skip_without_observe(masters)

    async def test() -> None:
        async with adlock.LockManager(urls(masters), timeout=0.5) as locks:
            a = await locks.campaign("watched", "a", LEASE)
            async with locks.observe("watched") as observer:
                changes = aiter(observer)

                async def change() -> object:
                    return await asyncio.wait_for(anext(changes), WAIT)

                assert await change() == adlock.Leader(a.id, "a", a.epoch)
                await a.resign()
                assert await change() is None
                b = await locks.campaign("watched", "b", LEASE)
                assert await change() == adlock.Leader(b.id, "b", b.epoch)
                await b.proclaim("c")
                assert await change() == adlock.Leader(b.id, "c", b.epoch)
                await b.resign()
                assert await change() is None
            with pytest.raises(StopAsyncIteration):
                await anext(changes)  # closed: no more changes

    asyncio.run(test())
