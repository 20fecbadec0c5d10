# unasync: asyncio only
"""Leader election, asyncio flavour: the twin of dlock's campaign, leader and Leadership."""
# unasync: sync only
# """Leader election (docs/election.md; the Rust client's election.rs), sync flavour: a campaign
# is a queued exclusive lock on the election's name whose owner carries the candidate's value
# (`<id> <value>`), so the fair queue, the handoff, replication and persistence carry the value
# with the grant; the leader's epoch is its fencing token. Leadership is kept by the lock's
# watchdog under the lease-loss contract (_pure/renewal.py)."""
# unasync: end

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType
from typing import Any

from redis.asyncio import Redis

from .._pure import commands as cmd
from .._pure.attempt import Policy
from .._pure.election import UNKNOWN, Leader, Seen, check_election, labelled, leader_view, seen_holder, split_owner
from .._pure.kind import Kind
from .._pure.verdicts import CONTENDED, AttemptFailed
from ..errors import DlockError, NodeFailure, NoQuorum
from .calls import Calls
from .driver import Acquire
from .lock import Lock

#: How long (seconds) one queued round of a campaign waits before it queues again (it waits on
#: the nodes, so this only bounds how stale a forgotten campaign's place can get).
CAMPAIGN_ROUND = 60.0


async def campaign(calls: Calls, name: str, value: str, ttl_ms: int, policy: Policy) -> Leadership:
    """Queues for `name` with owners labelled ` <value>` until elected; contention only makes it
    queue again, anything else is raised. A hold that owes its commit (a no-wait attempt: retry
    mode) commits its token before it leads, so that the epoch is a committed one: LockLost, and
    the hold released, when it cannot."""
    label = f" {value}" if value else ""
    while True:
        acquire = Acquire(calls, name, ttl_ms, time.monotonic() + CAMPAIGN_ROUND, Kind(), policy, label)
        won, attempts = await acquire.run(False)
        if isinstance(won, AttemptFailed):
            if won.kind == CONTENDED:
                continue
            raise won.to_error(name, calls.backend.needed(Kind()), attempts, waited=True) from None
        lock = Lock(calls, name, won.owner, ttl_ms, won.grant, Kind(), won.released)
        lock.start_watchdog()
        try:
            await lock.token()  # the epoch never leaves before a quorum committed it
        except BaseException:
            with contextlib.suppress(DlockError):
                await lock.release()
            raise
        return Leadership(lock, value)


async def leader(calls: Calls, name: str) -> Leader | None:
    """Who leads `name` by DLOCK.STATUS on every node; NoQuorum when too few answered to tell,
    WrongKindError when it is held as a shared lock or a semaphore."""
    replies = await calls.backend.nodes.everywhere(cmd.status(name))
    seen: list[Seen | str] = []
    failures: list[NodeFailure] = []
    for node, reply in zip(calls.backend.nodes.names, replies, strict=True):
        holder = seen_holder(name, node, reply)
        if isinstance(holder, NodeFailure):
            failures.append(holder)
            seen.append(UNKNOWN)
        else:
            seen.append(holder)
    needed = calls.backend.needed(Kind())
    view = leader_view(seen, needed)
    if isinstance(view, str):
        raise NoQuorum(name, needed, failures)
    return view


class Leadership:
    # unasync: asyncio only
    """Leadership won by `campaign`, as dlock.Leadership: `async with` it (resigns on exit), or
    `await leadership.resign()`."""

    # unasync: sync only
    # """Leadership won by `campaign`: its `epoch` (the fencing token, larger than every earlier
    # leader's), `value`, candidate `id`, and `lost`, set once when leadership is lost (the
    # lease-loss contract). Use it as a context manager (resigns on exit), or call `resign()`."""
    # unasync: end

    def __init__(self, lock: Lock, value: str) -> None:
        self._lock = lock
        self._value = value

    @property
    def name(self) -> str:
        return self._lock.resource

    @property
    def epoch(self) -> int:
        """The fencing token of this leadership: pass it to guarded writes, so that a deposed
        leader's are refused. Committed before the campaign returned: at hand."""
        epoch = self._lock._known_token()
        assert epoch is not None, "a campaign commits its token before it leads"
        return epoch

    @property
    def value(self) -> str:
        """The value observers read."""
        return self._value

    @property
    def id(self) -> str:
        """The candidate id observers see with the value."""
        return split_owner(self._lock.owner)[0]

    @property
    def lost(self) -> asyncio.Event:
        """Set once when leadership is lost: at its renew deadline without an extension confirmed
        by a quorum, or at once when the nodes refused one (docs/election.md)."""
        return self._lock.lost

    async def guarded(self, client: Redis, gate: str, *command: Any) -> Any:
        """As Lock.guarded, with the epoch as the token: `command` runs only while no newer
        leader wrote through `gate`."""
        return await self._lock.guarded(client, gate, *command)

    async def proclaim(self, value: str) -> None:
        """Changes the value observers read, keeping leadership and epoch (the watchdog paused
        meanwhile). NoQuorum or LockLost when a quorum did not take it: observers then read the
        old value (or none)."""
        _, value = check_election(self.name, value)
        await self._lock.stop_watchdog()
        try:
            await self._lock._rename(labelled(self.id, value))
            self._value = value
        finally:
            if not self._lock.lost.is_set():
                self._lock.start_watchdog()

    async def resign(self) -> None:
        """Gives leadership up: the watchdog stops before the release is sent (no extension
        after it), and the next candidate queued is granted at once. NoQuorum if too few nodes
        answered (leadership then ends at its TTL)."""
        await self._lock.release()

    async def __aenter__(self) -> Leadership:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Resigns; raises LockLost if leadership was lost meanwhile (unless the block raised)."""
        await self._lock.__aexit__(kind, error, trace)

    def __repr__(self) -> str:
        return f"Leadership(name={self.name!r}, epoch={self.epoch}, value={self._value!r})"
