"""Durations are seconds, as in redis-py, or timedeltas; a TTL that is more likely milliseconds
typed by habit (over an hour in seconds) is taken with a UnitWarning saying so (docs/units.md)."""

from __future__ import annotations

import asyncio
import warnings
from datetime import timedelta

import pytest
from cluster import Server, free_port

import dlock
import dlock.asyncio
from dlock._pure.options import check_ttl, check_wait

NOWHERE = [f"redis://127.0.0.1:{free_port()}"]


def test_a_ttl_of_hours_in_seconds_is_warned_about_and_points_at_the_caller() -> None:
    slip = r"ttl=10000 is 2.8 hours: dlock takes seconds"
    # Taken as asked: the (absent) node is asked.
    with pytest.warns(dlock.UnitWarning, match=slip) as caught, pytest.raises(dlock.NoQuorum):
        dlock.LockManager(NOWHERE).try_lock("r", ttl=10000)
    assert caught[0].filename == __file__

    async def attempt() -> None:
        await dlock.asyncio.LockManager(NOWHERE).try_lock("r", ttl=7200)

    with pytest.warns(dlock.UnitWarning, match="timedelta"), pytest.raises(dlock.NoQuorum):
        asyncio.run(attempt())


def test_timedeltas_are_taken_and_never_warned_about() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_ttl(timedelta(hours=3)) == 3 * 3_600_000
        assert check_ttl(timedelta(milliseconds=1500)) == 1500
        assert check_ttl(3600) == 3_600_000  # an hour in seconds: no warning yet
        assert check_wait(timedelta(seconds=5)) == 5.0
    with pytest.raises(ValueError, match="at most 86400 s"):
        check_ttl(timedelta(days=2))
    with pytest.raises(ValueError, match="wait must be >= 0"):
        check_wait(timedelta(seconds=-1))


def test_a_timedelta_ttl_reaches_the_nodes_in_milliseconds(one: Server) -> None:
    locks = dlock.LockManager([one.url])
    with locks.lock("r", ttl=timedelta(seconds=20), wait=timedelta(seconds=1)) as lock:
        ttl_ms = one.client().pttl("r")
        assert 19_000 < ttl_ms <= 20_000
        lock.extend(timedelta(seconds=40))
        assert 39_000 < one.client().pttl("r") <= 40_000
