"""Many local waiters, few server waits (docs/waiting.md): the callers of one manager waiting for
one resource keep one wait on each node, not one each, and are all served, one at a time; in both
flavours."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from cluster import Server
from conftest import urls, waiters

import dlock
import dlock.asyncio


def blocked(server: Server) -> int:
    """A node's connections inside a server-side wait."""
    return int(server.client().info("clients")["blocked_clients"])


def until(condition: object, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting for the nodes"
        time.sleep(0.01)


def test_two_hundred_tasks_keep_one_wait_per_node_and_are_all_served(three: list[Server]) -> None:
    async def scenario() -> None:
        holder = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        held = await holder.try_lock("r")
        locks = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        inside, served = [False], [0]

        async def one() -> None:
            async with locks.lock("r", wait=60):
                assert not inside[0], "two holders at once"
                inside[0] = True
                served[0] += 1
                await asyncio.sleep(0)
                inside[0] = False

        tasks = [asyncio.ensure_future(one()) for _ in range(200)]
        await asyncio.sleep(0.3)
        for server in three:
            assert len(waiters(server, "r")) == 1, "one server-side wait per resource"
            assert blocked(server) == 1, "one blocked connection per node"
        await held.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        assert served[0] == 200

    asyncio.run(scenario())


def test_threads_keep_one_wait_per_node_and_a_late_one_times_out_on_time(three: list[Server]) -> None:
    held = dlock.LockManager(urls(three), timeout=0.5).try_lock("r")
    locks = dlock.LockManager(urls(three), timeout=0.5)
    served: list[int] = []

    def one() -> None:
        with locks.lock("r", wait=30):
            served.append(1)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for thread in threads:
        thread.start()
    until(lambda: all(len(waiters(server, "r")) == 1 for server in three))
    time.sleep(0.2)
    assert all(blocked(server) == 1 for server in three), "one blocked connection per node"
    started = time.monotonic()
    with pytest.raises(dlock.LockTimeout):
        locks.lock("r", wait=0.3)  # queued in the process: at its deadline, one try
    # On time: well before the others' 30 s waits, with room for a loaded 2-core machine.
    assert 0.3 <= time.monotonic() - started < 2.5
    held.release()
    for thread in threads:
        thread.join(30)
    assert len(served) == 20, "every thread served"


def test_two_readers_of_one_manager_hold_together_though_a_writer_queued_between_them(three: list[Server]) -> None:
    """A shared hold waits on the nodes each time (adversary, local waits): a turn in the process
    put the second reader behind another process's writer, which queued after the first reader,
    and the second waited out its whole wait while the first held."""

    async def scenario() -> None:
        holder = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        writer = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        readers = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        held = await holder.try_lock("rw")
        first = asyncio.ensure_future(readers.lock("rw", 10, 3, shared=True))
        await asyncio.sleep(0.1)
        second = asyncio.ensure_future(readers.lock("rw", 10, 3, shared=True))
        await asyncio.sleep(0.1)
        written = asyncio.ensure_future(writer.lock("rw", 10, 10))
        await asyncio.sleep(0.1)
        await held.release()
        one = await first
        two = await asyncio.wait_for(second, 1.0)  # beside the first, ahead of the writer
        await two.release()
        await one.release()
        await (await written).release()

    asyncio.run(scenario())
