"""Leader election against real nodes, asyncio client: the paths of test_election.py, awaited
(the handoff, proclaim, the lease-loss contract, nothing sent after a resignation, bad input)."""

from __future__ import annotations

import asyncio
import time

import pytest
from cluster import Server
from conftest import urls
from test_election import LEASE

from dlock.asyncio import Leader, Leadership, LockManager


def manager(servers: list[Server], timeout: float = 0.5) -> LockManager:
    return LockManager(urls(servers), timeout=timeout)


def test_campaign_resign_hands_over_at_once(masters: list[Server]) -> None:
    async def test() -> None:
        async with manager(masters) as a, manager(masters) as b:
            assert await a.leader("jobs") is None
            first = await a.campaign("jobs", "10.0.0.1:80", LEASE)
            assert await a.leader("jobs") == Leader(first.id, "10.0.0.1:80", first.epoch)
            waiting = asyncio.ensure_future(b.campaign("jobs", "10.0.0.2:80", LEASE))
            await asyncio.sleep(0.3)
            assert not waiting.done(), "the second candidate waits while the first leads"
            resigned = time.monotonic()
            await first.resign()
            second = await asyncio.wait_for(waiting, 20.0)
            assert isinstance(second, Leadership)
            assert time.monotonic() - resigned < 1.0, "handed over at once"
            assert second.epoch > first.epoch
            assert await a.leader("jobs") == Leader(second.id, "10.0.0.2:80", second.epoch)
            await second.resign()
            assert await a.leader("jobs") is None

    asyncio.run(asyncio.wait_for(test(), 60.0))


def test_proclaim_keeps_the_epoch_under_the_watchdog(masters: list[Server]) -> None:
    async def test() -> None:
        async with manager(masters) as locks:
            async with await locks.campaign("svc", "v1", LEASE) as leading:
                epoch = leading.epoch
                await leading.proclaim("v2 with spaces")
                assert await locks.leader("svc") == Leader(leading.id, "v2 with spaces", epoch)
                await asyncio.sleep(LEASE * 2)
                assert not leading.lost.is_set(), "the watchdog still extends under the new value"
                assert await locks.leader("svc") == Leader(leading.id, "v2 with spaces", epoch)
            assert await locks.leader("svc") is None  # leaving the block resigned

    asyncio.run(asyncio.wait_for(test(), 60.0))


def test_frozen_nodes_lose_leadership_at_the_renew_deadline(one: Server) -> None:
    async def test() -> float:
        async with manager([one], timeout=0.2) as locks:
            leading = await locks.campaign("frozen", "", LEASE)
            granted = time.monotonic()
            one.pause()
            try:
                await asyncio.wait_for(leading.lost.wait(), 20.0)
                return time.monotonic() - granted
            finally:
                one.resume()

    at = asyncio.run(test())
    assert LEASE / 2 < at < LEASE - LEASE / 10 + 0.1, f"lost at {at:.3f}s, not at the renew deadline"


def test_a_refused_extension_is_a_loss_at_once(one: Server) -> None:
    async def test() -> None:
        async with manager([one]) as locks:
            leading = await locks.campaign("taken", "", LEASE)
            assert one.client().execute_command("DLOCK.FORCERELEASE", "taken") == 1
            started = time.monotonic()
            await asyncio.wait_for(leading.lost.wait(), 20.0)
            assert time.monotonic() - started < LEASE / 2

    asyncio.run(test())


def test_no_extension_is_sent_after_resign(one: Server) -> None:
    async def test() -> None:
        async with manager([one]) as locks:
            leading = await locks.campaign("quiet", "", 0.3)
            monitor = one.client()
            await leading.resign()
            monitor.config_resetstat()
            await asyncio.sleep(0.4)
            stats = monitor.info("commandstats")
            assert not any("dlock.extend" in name for name in stats), stats

    asyncio.run(test())


def test_bad_input_is_refused_before_any_node_is_asked() -> None:
    async def test() -> None:
        locks = LockManager(["redis://127.0.0.1:1"])
        for call in (
            locks.campaign("", "v", LEASE),
            locks.campaign("e", "v" * 201, LEASE),
            locks.campaign("e", "v", 0),
            locks.leader(""),
        ):
            with pytest.raises(ValueError):
                await call
        with pytest.raises(ValueError):
            locks.observe("")

    asyncio.run(test())
