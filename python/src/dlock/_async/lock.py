# unasync: asyncio only
"""A held lock and its watchdog, asyncio flavour: the twin of dlock.lock.Lock."""
# unasync: sync only
# """A held lock (the Rust crate's LockGuard) and its watchdog, sync flavour."""
# unasync: end

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType
from typing import Any

import redis
from redis.asyncio import Redis

from .._pure.commands import Resource, name_of
from .._pure.commit import PENDING, Commit, Committed
from .._pure.kind import Kind
from .._pure.options import Duration, check_lease
from .._pure.renewal import Extension, outcome, renew_margin, renewal
from .._pure.sets import ONE_TOKEN, KeySet
from .._pure.timing import validity
from .._pure.verdicts import Grant, Tally
from .._transport.aio.concurrency import Flight, Mutex, Worker, shielded, within
from ..errors import DlockError, LockLost, StaleToken
from .calls import Calls


class Lock:
    # unasync: asyncio only
    """A lock (or a shared hold, or a semaphore's permit) held on a quorum. `async with` it
    (released on exit, even when the block is cancelled), or `await lock.release()`."""

    # unasync: sync only
    # """A lock held on a quorum: a majority, more for a semaphore's permit (`shared`, `limit`
    # say which hold it is). Use it as a context manager (released on exit), or call `release()`.
    # `token()` gives the fencing token to hand to the protected resource."""
    # unasync: end

    def __init__(
        self,
        calls: Calls,
        resource: Resource,
        owner: str,
        ttl_ms: int,
        grant: Grant,
        kind: Kind,
        on_release: asyncio.Event | None = None,
    ) -> None:
        self._calls = calls
        self._target = resource  # what the calls take: one resource, or a set (the *ALL commands)
        self._resource = name_of(resource)  # its name in errors
        self._owner = owner
        self._ttl_ms = ttl_ms
        self._kind = kind
        self._needed = calls.backend.needed(kind)  # the quorum of every extension and release
        self._token = grant.token  # the largest grant; a fencing token once committed
        self._holding = list(grant.holding)  # the nodes that granted it
        self._owed = grant.owed  # its commit, paid when the token is first read (_pure/commit.py)
        self._committing: Flight[int] = Flight()  # that commit, shared by the readers meanwhile
        self._lease_ttl_ms = ttl_ms  # the TTL last set on the nodes (acquired, or extended with)
        # The lease's writes (an extension, the watchdog's, the commit: what sets the nodes' TTL)
        # go one at a time, each from before its requests are sent until its outcome is applied:
        # sent in the order they are applied, they reach each node in that order too, so the
        # validity kept here is the one the last write gave the nodes (the nodes keep the write
        # that arrived last; two at once could leave the client believing the other one).
        self._writes = Mutex()
        self._valid_until = grant.valid_until
        self._acquired_at = time.monotonic()
        self._on_release = on_release
        self._released = False
        self._lost = asyncio.Event()
        self._watchdog: Worker | None = None

    async def token(self) -> int:
        # unasync: asyncio only
        """As dlock.Lock.token: `await lock.token()`, the fencing token, committed first if the
        hold owes its commit (one commit, whoever reads); LockLost when it cannot be."""
        # unasync: sync only
        # """The fencing token: the protected resource must reject any token lower than the
        # highest it has seen. A hold of `try_lock` (or of `lock()` in retry mode) on several nodes
        # with fencing on commits its token when it is first read: DLOCK.FENCE on the nodes it
        # holds, once, whoever reads (readers meanwhile wait for that commit; later ones get its
        # outcome), the validity then counted from the commit. LockLost when it cannot be read: the
        # commit failed on too many nodes or the validity was over (the lock is then lost: `lost`
        # set), or the lock was released or lost before it was committed. Any other hold's token
        # is at hand (already committed): returned at once."""
        # unasync: end
        if not self._owed:
            return self._token
        return await self._committing.run(self._commit)

    async def tokens(self) -> list[int]:
        """One token per resource, in the caller's order (`resources`): this lock's token for each
        (read as `token()` reads it), as a CrossSlotSet's `tokens()` gives them."""
        token = await self.token()
        return [token] * len(self.resources)

    async def _commit(self) -> int:
        """The commit owed (_pure/commit.py): FENCE of the token, with the TTL last set, on the
        nodes that granted it; the token once a quorum committed it, the lease then counted from
        the commit's start. Otherwise the lock is lost: LockLost, and when FENCEs went out the
        hold is given back (RELEASE everywhere, best effort: one that timed out may land later
        and would keep the lost lock a whole TTL)."""
        if not self._owed:
            return self._token  # committed by the reader before this one
        if self._released or self._lost.is_set():
            raise LockLost(self._resource)
        async with self._writes:  # no extension meanwhile: the lease's writes go one at a time
            if self.validity <= 0:
                self._lost.set()  # the lease may be someone else's: nothing is sent
                committed, sent = False, False
            else:
                committed, sent = await self._fence(), True
        if committed:
            return self._token
        if sent:
            await shielded(self._calls.release(self._target, self._owner))
        raise await self._lose()

    async def _fence(self) -> bool:
        """The commit's round, with the lease's writes held: FENCE on the holding nodes, its
        outcome applied to the lease (committed: validity counted from the round's start, no
        longer owed; else `lost` set). Whether a quorum committed it in time."""
        backend, started, ttl_ms = self._calls.backend, time.monotonic(), self._lease_ttl_ms
        commit, asked = Commit.start(backend.size(), self._needed, self._token, self._holding)
        why_not = await self._calls.fence(self._target, self._owner, self._token, ttl_ms, asked)
        decided = commit.outcome
        for node, failure in zip(asked, why_not, strict=True):
            decided = commit.on_fenced(node, failure is None)
            if decided != PENDING:
                break  # the first decided outcome: later replies change nothing
        left = validity(ttl_ms, started, time.monotonic(), backend.opts)
        if not isinstance(decided, Committed) or left is None:
            self._lost.set()
            return False
        self._valid_until = time.monotonic() + left  # the watchdog's renew deadline moves with it
        self._owed = False
        return True

    async def _lose(self) -> LockLost:
        """The lock known lost (a commit that failed): `lost` set, the watchdog stopped; the error
        to raise."""
        self._lost.set()
        await self.stop_watchdog()
        return LockLost(self._resource)

    def _known_token(self) -> int | None:
        """The token if reading it needs no commit (none owed, or committed), else None."""
        return None if self._owed else self._token

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def ttl_ms(self) -> int:
        """The TTL acquired with, in milliseconds (extend()'s default)."""
        return self._ttl_ms

    @property
    def resource(self) -> str:
        """The resource's name (a set's: its keys joined by commas)."""
        return self._resource

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources held: the one of a lock, or the keys of a set (`lock_all`), in the
        caller's order."""
        target = self._target
        return target.keys if isinstance(target, KeySet) else (target,)

    @property
    def shared(self) -> bool:
        """Whether this is a shared hold of a lock (`shared=True`)."""
        return self._kind.shared

    @property
    def limit(self) -> int | None:
        """The semaphore's limit for a permit (`limit=k`), else None."""
        return self._kind.limit

    @property
    def validity(self) -> float:
        """Seconds left before the lock may be held by someone else (0 when over, or once the
        lock is known lost)."""
        if self._lost.is_set():
            return 0.0
        return max(0.0, self._valid_until - time.monotonic())

    @property
    def lost(self) -> asyncio.Event:
        """Set (once) when the lock is known lost: by the watchdog (no extension confirmed by the
        renew deadline, a tenth of the TTL before validity ends; the nodes refused one; `max_hold`
        reached: docs/election.md, the lease-loss contract), by a guarded write that found a
        newer holder's token, or by a token read whose commit failed."""
        return self._lost

    async def guarded(self, client: Redis, gate: str, *command: Any) -> Any:
        # unasync: asyncio only
        """As dlock.Lock.guarded: `command` runs on `client` only while this lock's token is
        current at `gate`; StaleToken (a LockLost) and `lost` set when a newer holder wrote."""
        # unasync: sync only
        # """Runs `command` (e.g. "SET", "report", body) on `client` (the data's Redis, with the
        # module) only if this lock's token is still current at the key `gate`, raising the gate
        # to it, in one step on that server (DLOCK.GUARD); returns the command's reply. The token
        # is read as `token()` reads it (committed first if the hold owes its commit). When a
        # newer holder has written through the gate, nothing changes, `lost` is set and
        # StaleToken (a LockLost) is raised; once `lost` is set, LockLost is raised before
        # anything is sent. Other errors are redis-py's."""
        # unasync: end
        if self._lost.is_set():
            raise LockLost(self._resource)  # known lost: not even a first write may go
        token = await self.token()
        try:
            return await client.execute_command("DLOCK.GUARD", gate, token, *command)  # type: ignore[no-untyped-call, unused-ignore]
        except redis.ResponseError as error:
            if not str(error).startswith("STALE"):
                raise
            self._lost.set()
            await self.stop_watchdog()
            raise StaleToken(self._resource, gate, token) from error

    async def extend(self, ttl: Duration | None = None) -> None:
        # unasync: asyncio only
        """As dlock.Lock.extend: NoQuorum when too few answered, LockLost when not extended."""
        # unasync: sync only
        # """Resets the TTL (default: the one acquired with) on all nodes. Raises NoQuorum when too
        # few nodes answered, LockLost when a quorum answered and did not extend; either way
        # `validity` still counts down from the last success. While the token's commit or the
        # watchdog's extension is out, it waits for it (the lease's writes go one at a time)."""
        # unasync: end
        ttl_ms = self._ttl_ms if ttl is None else check_lease(ttl, self._calls.backend.opts)
        if self._lost.is_set():
            raise LockLost(self._resource)  # a newer holder exists: its lease is of no use
        # A cancellation of the caller does not cut it short: its outcome is applied.
        result = await shielded(self._extend_lease(ttl_ms, None, None))
        if result is None:
            raise LockLost(self._resource)  # lost while it waited for the lease's other write
        if isinstance(result, Tally):
            raise result.extend_error(self._resource, self._needed)

    async def _extend_lease(self, ttl_ms: int, timeout: float | None, by: float | None) -> float | Tally | None:
        """One extension (EXTEND ... `ttl_ms` everywhere, each node's call within `timeout`),
        with the lease's writes held: the new deadline, applied to the lease when confirmed
        (before `by`, if not None); the tally when not extended; None (nothing sent) when the lock
        is known lost."""
        async with self._writes:
            if self._lost.is_set():
                return None
            result = await self._calls.extend(self._target, self._owner, ttl_ms, self._needed, timeout)
            if isinstance(result, float) and (by is None or time.monotonic() < by):
                self._valid_until, self._lease_ttl_ms = result, ttl_ms
            return result

    async def _rename(self, owner: str) -> None:
        """Holds the lock under `owner` from now on (DLOCK.PROCLAIM, keeping token and lease): when
        a quorum did not take it, the nodes that did are turned back, and NoQuorum or LockLost
        says why. For a Leadership's proclaim, with the watchdog stopped."""
        if owner == self._owner:
            return
        tally = await self._calls.proclaim(self._resource, self._owner, self._token, owner)
        if tally.done >= self._needed:
            self._owner = owner
            return
        await self._calls.proclaim(self._resource, owner, self._token, self._owner)
        raise tally.extend_error(self._resource, self._needed)

    async def release(self) -> None:
        # unasync: asyncio only
        """Releases on all nodes; a cancellation meanwhile does not stop the RELEASE going out.
        Raises NoQuorum naming the nodes if fewer than a quorum answered."""
        # unasync: sync only
        # """Releases on all nodes (a second call does nothing). Raises NoQuorum naming the nodes
        # if fewer than a quorum answered: the lock then lingers there until its TTL."""
        # unasync: end
        if self._released:
            return
        self._released = True
        await self.stop_watchdog()
        if self._on_release is not None:
            self._on_release.set()  # waits still out now know a grant they get is stale
        tally = await shielded(self._calls.release(self._target, self._owner))
        if tally.answered() < self._needed:
            raise tally.no_quorum(self._resource, self._needed)

    async def detach(self) -> tuple[str, int, float]:
        # unasync: asyncio only
        """As dlock.Lock.detach: (owner, token, validity), awaited (the token is read as
        `token()` reads it); the watchdog, if any, is cancelled."""
        # unasync: sync only
        # """Keeps the lock held with nobody here to release it (no release on exit): for handing
        # it to another process, which acts by owner name (`release_owner`, `extend_owner`).
        # Returns (owner, token, validity), the token read as `token()` reads it (LockLost, and
        # nothing detached, when it cannot be)."""
        # unasync: end
        token = await self.token()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
        self._released = True
        return self._owner, token, self.validity

    def start_watchdog(self) -> None:
        # unasync: asyncio only
        """Extends every `extend_interval` (default ttl/3) in a task; at the renew deadline
        without a confirmed extension, when the nodes refuse one, or at `max_hold`, it stops and
        sets `lost`. An unconfirmed extension is tried again sooner."""
        # unasync: sync only
        # """Extends every `extend_interval` (default ttl/3) until released. It stops and sets
        # `lost` at the renew deadline (a tenth of the TTL before validity ends) unless a quorum
        # confirmed an extension first, at once when the nodes refuse one ("not held" on so many
        # that no quorum is left), or at `max_hold` after acquisition; an extension that was not
        # confirmed (nodes down or slow) is tried again at half the interval. The lease-loss
        # contract: docs/election.md."""
        # unasync: end
        if self._watchdog is None and not self._released:
            self._watchdog = Worker(self._keep_extended, f"dlock-watchdog-{self._resource}")

    async def stop_watchdog(self) -> bool:
        """Stops the watchdog; True if the lock was lost before that."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            await watchdog.stop()
        return self._lost.is_set()

    async def _keep_extended(self, worker: Worker) -> None:
        """The watchdog, by the lease-loss contract (_pure/renewal.py): extends every interval;
        sets `lost` and ends at the renew deadline unless a quorum confirmed an extension first,
        at once when the nodes refuse one, or at `max_hold`."""
        opts = self._calls.backend.opts
        interval_ms = max(self._ttl_ms // 3 if opts.extend_interval is None else round(opts.extend_interval * 1000), 1)
        hold_until = None if opts.max_hold is None else self._acquired_at + opts.max_hold
        last: Extension = "extended"
        while True:
            now = time.monotonic()
            left_ms = max(0, int((self._valid_until - now) * 1000))
            pause_ms = renewal(self._ttl_ms, interval_ms, left_ms, last)
            if pause_ms is None:
                break
            pause = pause_ms / 1000
            capped = hold_until is not None and now + pause >= hold_until
            if hold_until is not None and capped:
                pause = max(0.0, hold_until - now)
            if await worker.pause(pause):
                return  # stopped (released)
            if capped:
                break
            renew_deadline = self._valid_until - min(renew_margin(self._ttl_ms), left_ms) / 1000
            extended = await self._extend_by(renew_deadline)
            if extended is None:
                break
            last = extended
        self._lost.set()

    async def _extend_by(self, renew_deadline: float) -> Extension | None:
        """One extension, raced against the renew deadline: how it went, or None when it was not
        confirmed by then (still out, or confirmed too late)."""
        until = renew_deadline - time.monotonic()
        # Each node's call is bounded by the deadline too: a sync extension cannot be raced.
        bound = max(0.001, min(self._calls.backend.opts.timeout, until))
        extend = self._extend_lease(self._ttl_ms, bound, renew_deadline)
        result = await within(extend, until)
        if result is None or time.monotonic() >= renew_deadline:
            return None
        if isinstance(result, float):
            return "extended"
        return outcome(self._calls.backend.size(), self._needed, result.refused)

    async def __aenter__(self) -> Lock:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        # unasync: asyncio only
        """Releases; raises LockLost if the lock was lost while the block ran (unless the block
        raised something itself)."""
        # unasync: sync only
        # """Releases; raises LockLost if the watchdog saw the lock lost while the block ran
        # (unless the block raised something itself)."""
        # unasync: end
        lost = await self.stop_watchdog()
        with contextlib.suppress(DlockError):  # as with_lock in Rust: it runs out at its TTL
            await self.release()
        if lost and kind is None:
            raise LockLost(self._resource)

    def __repr__(self) -> str:
        kind = ", shared=True" if self._kind.shared else ""
        kind = kind if self._kind.limit is None else f", limit={self._kind.limit}"
        token = "(uncommitted)" if self._owed else self._token  # never a token before its commit
        return (
            f"Lock(resource={self._resource!r}, owner={self._owner!r}, token={token}, "
            f"validity={self.validity:.3f}{kind})"
        )


async def give_back(locks: list[Lock]) -> None:
    """Releases every lock of `locks`, the last taken first, whatever each answers (best effort:
    one that fails runs out at its TTL)."""
    for lock in reversed(locks):
        with contextlib.suppress(DlockError):
            await lock.release()


class CrossSlotSet:
    # unasync: asyncio only
    """A set whose keys span several slots of a Redis Cluster node, held as its slot groups (one
    Lock each, taken in slot order): `async with` it, or `await held.release()`."""

    # unasync: sync only
    # """A set whose keys span several slots of a Redis Cluster node (`lock_all`), held as its
    # slot groups: one Lock each, taken one after the other in slot order (docs/multi.md). Each
    # group has its own token (`tokens()`: one per resource); extended, watched and released
    # together, and lost as a whole when any group is: the others are then given back. Use it as
    # a context manager (released on exit), or call `release()`."""
    # unasync: end

    def __init__(self, resources: tuple[str, ...], groups: list[Lock]) -> None:
        self._resources = resources  # in the caller's order
        self._groups = groups  # in slot order
        self._of = {key: lock for lock in groups for key in lock.resources}  # each resource's group
        self._resource = ",".join(resources)
        self._lost = asyncio.Event()
        self._watch: Worker | None = None
        self._released = False

    @property
    def resource(self) -> str:
        """The set's name: its keys joined by commas, in the caller's order."""
        return self._resource

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources held, in the caller's order."""
        return self._resources

    @property
    def groups(self) -> tuple[Lock, ...]:
        """The slot groups held, each a Lock (a set of one slot), in slot order."""
        return tuple(self._groups)

    @property
    def validity(self) -> float:
        """Seconds left before some group may be held by someone else (the least of the groups')."""
        if self._lost.is_set():
            return 0.0
        return min(lock.validity for lock in self._groups)

    @property
    def lost(self) -> asyncio.Event:
        """Set (once) when the set is known lost: a group was lost (its watchdog, a guarded write,
        a failed commit or extension); the other groups are then released."""
        if not self._lost.is_set() and any(lock.lost.is_set() for lock in self._groups):
            self._lost.set()
        return self._lost

    async def token(self) -> int:
        """Refused (ValueError): each slot group has a token of its own; read `tokens()`."""
        raise ValueError(ONE_TOKEN.format(len(self._groups)))

    async def tokens(self) -> list[int]:
        # unasync: asyncio only
        """One token per resource, in the caller's order: its group's (committed first if owed).
        LockLost, the other groups released, when a group's cannot be read."""
        # unasync: sync only
        # """One token per resource, in the caller's order: the token of the resource's slot
        # group, read as `Lock.token()` reads it (committed first if the hold owes its commit).
        # Tokens of different groups come from different masters: each fences its own group's
        # resources only. When a group's token cannot be read the set is lost: the other groups
        # are released and LockLost raised."""
        # unasync: end
        if self._lost.is_set():
            raise LockLost(self._resource)
        by_group: dict[int, int] = {}
        for lock in self._groups:
            try:
                by_group[id(lock)] = await lock.token()
            except LockLost as error:
                raise await self._lose() from error
        return [by_group[id(self._of[key])] for key in self._resources]

    async def extend(self, ttl: Duration | None = None) -> None:
        # unasync: asyncio only
        """Extends every group; if any fails, the set is lost: the others released, LockLost."""
        # unasync: sync only
        # """Extends every group (default: the TTL acquired with). If any group is not extended
        # (NoQuorum or LockLost), the set is lost: every group is released and LockLost raised."""
        # unasync: end
        if self._lost.is_set():
            raise LockLost(self._resource)
        for lock in self._groups:
            try:
                await lock.extend(ttl)
            except DlockError as error:
                raise await self._lose() from error

    async def _lose(self) -> LockLost:
        """The set known lost: `lost` set, its watch stopped, every group given back (best
        effort); the error to raise."""
        self._lost.set()
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.stop()
        await self._give_back()
        return LockLost(self._resource)

    async def _give_back(self) -> None:
        await give_back(self._groups)

    async def release(self) -> None:
        # unasync: asyncio only
        """Releases every group (the last taken first); a second call does nothing. NoQuorum
        (the first group's that had too few answers) once every group was asked."""
        # unasync: sync only
        # """Releases every group, the last taken first (a second call does nothing). Raises the
        # first NoQuorum met, once every group was asked: that group lingers until its TTL."""
        # unasync: end
        if self._released:
            return
        self._released = True
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.stop()
        failed: DlockError | None = None
        for lock in reversed(self._groups):
            try:
                await lock.release()
            except DlockError as error:
                failed = failed or error
        if failed is not None:
            raise failed

    def start_watchdog(self) -> None:
        """Every group's watchdog (as Lock.start_watchdog), and a watch of them: when one group
        is lost, `lost` is set and the others are released."""
        for lock in self._groups:
            lock.start_watchdog()
        if self._watch is None and not self._released:
            self._watch = Worker(self._watch_groups, f"dlock-watchdog-{self._resource}")

    async def stop_watchdog(self) -> bool:
        """Stops the groups' watchdogs and the watch; True if the set was lost before that."""
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.stop()
        lost = False
        for lock in self._groups:
            lost = await lock.stop_watchdog() or lost
        return lost or self.lost.is_set()

    async def _watch_groups(self, worker: Worker) -> None:
        """Looks at the groups' `lost` every few milliseconds; at the first loss, sets the set's
        and gives every group back."""
        step = min(0.05, min(lock.ttl_ms for lock in self._groups) / 1000 / 30)
        while not any(lock.lost.is_set() for lock in self._groups):
            if await worker.pause(step):
                return  # stopped (released)
        self._lost.set()
        await self._give_back()

    async def __aenter__(self) -> CrossSlotSet:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Releases every group; raises LockLost if the set was lost while the block ran (unless
        the block raised something itself)."""
        lost = await self.stop_watchdog()
        with contextlib.suppress(DlockError):
            await self.release()
        if lost and kind is None:
            raise LockLost(self._resource)

    def __repr__(self) -> str:
        return f"CrossSlotSet(resources={self._resources!r}, groups={len(self._groups)}, validity={self.validity:.3f})"
