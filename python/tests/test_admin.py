"""Acting by owner name and per-node status (the Rust crate's admin.rs), sync and asyncio, and
against the Rust CLI's `dlock acquire` / `dlock status`."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from cluster import CLI, Server
from conftest import free_everywhere, urls

import dlock
import dlock.asyncio


def test_status_shows_each_node_held_free_or_unreachable(five: list[Server]) -> None:
    locks = dlock.LockManager(urls(five), timeout=0.5)
    assert all(s.info is None and s.failure is None for s in locks.status("r"))
    lock = locks.try_lock("r", ttl=10.0)
    token = lock.token()  # committed on the five nodes that granted
    five[4].kill()
    views = locks.status("r")
    assert [v.node for v in views] == urls(five)
    for view in views[:4]:
        assert view.info is not None and view.failure is None
        assert (view.info.owner, view.info.token, view.info.holds, view.info.waiters) == (lock.owner, token, 1, 0)
        assert 9_000 < view.info.ttl_ms <= 10_000
    assert views[4].info is None and views[4].failure is not None and "connection refused" in views[4].failure
    lock.release()


def test_a_detached_lock_is_released_and_extended_by_owner_name(five: list[Server]) -> None:
    with dlock.LockManager(urls(five), timeout=0.5) as locks, locks.lock("r", ttl=10.0, wait=1.0) as lock:
        owner, token, validity = lock.detach()
    assert (owner, token) == (lock.owner, lock.token()) and 9.0 < validity <= 10.0
    other = dlock.LockManager(urls(five), timeout=0.5)  # as another process would
    assert all(v.info is not None and v.info.owner == owner for v in other.status("r"))  # still held
    assert 29.0 < other.extend_owner("r", owner, ttl=30.0) <= 30.0
    assert other.release_owner("r", owner) == 5
    assert free_everywhere(five, "r")
    assert other.release_owner("r", owner) == 0  # answered, held nowhere
    with pytest.raises(dlock.LockLost):
        other.extend_owner("r", owner, ttl=30.0)


@pytest.mark.parametrize(
    ("owner", "error", "message"),
    [("", ValueError, "owner must be 1 to 256 bytes"), ("x" * 257, ValueError, "got 257 bytes"), (7, TypeError, "str")],
)
def test_bad_owner_names_are_refused(owner: object, error: type[Exception], message: str) -> None:
    locks = dlock.LockManager(["redis://127.0.0.1:1"])
    with pytest.raises(error, match=message):
        locks.release_owner("r", owner)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        locks.extend_owner("r", owner, ttl=1.0)  # type: ignore[arg-type]


def test_asyncio_admin(three: list[Server]) -> None:
    async def test() -> None:
        locks = dlock.asyncio.LockManager(urls(three), timeout=0.5)
        lock = await locks.try_lock("r", ttl=10.0)
        owner, token, _ = await lock.detach()  # the token committed first
        assert {v.info.token for v in await locks.status("r") if v.info} == {token}
        assert await locks.extend_owner("r", owner, ttl=20.0) > 19.0
        assert await locks.release_owner("r", owner) == 3
        assert all(v.info is None for v in await locks.status("r"))
        await locks.close()

    asyncio.run(test())


def test_a_lock_taken_by_the_rust_cli_is_seen_and_released_from_python(three: list[Server]) -> None:
    assert CLI.exists(), f"{CLI} is missing: run `make build` (or set DLOCK_CLI)"
    nodes = ",".join(urls(three))
    taken = subprocess.run(
        [str(CLI), "acquire", "job", "--nodes", nodes, "--timeout", "500ms", "--ttl", "30s"],
        capture_output=True,
        text=True,
        check=True,
    )
    owner, token, _validity = taken.stdout.split()
    locks = dlock.LockManager(urls(three), timeout=0.5)
    views = locks.status("job")
    assert sum(v.info is not None and (v.info.owner, v.info.token) == (owner, int(token)) for v in views) >= 2
    assert locks.release_owner("job", owner) == 3
    shown = subprocess.run([str(CLI), "status", "job", "--nodes", nodes], capture_output=True, text=True, check=True)
    assert shown.stdout.split("\n")[:3] == [f"{url} free" for url in urls(three)]
