# unasync: asyncio only
"""LockManager, asyncio flavour: the same shape as dlock.LockManager, awaitable."""
# unasync: sync only
# """LockManager, sync flavour: Redlock across N masters running the dlock module, with quorum
# fencing tokens (the Rust crate's `dlock_client::LockManager`)."""
# unasync: end

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from redis.asyncio import Redis

from .._pure import commands as cmd
from .._pure.admin import NodeStatus, node_status
from .._pure.attempt import QUEUE, Policy
from .._pure.commands import Resource
from .._pure.connect import security
from .._pure.election import Leader, check_election
from .._pure.kind import Kind, check_kind, check_limit
from .._pure.observe import NodeTop, Walk, check_rows
from .._pure.options import (
    Duration,
    Options,
    ReplicaAck,
    WaitMode,
    check_lease,
    check_owner,
    check_resource,
    check_wait,
)
from .._pure.sets import KeySet, check_set, split
from .._pure.urls import Seed, check_nodes
from .._pure.verdicts import AttemptFailed

# unasync: sync only
# from ..errors import LockLost
# unasync: end
from .._transport.aio.local_waits import LocalWaits
from .._transport.aio.nodes import Nodes
from .backend import Backend
from .calls import Calls
from .driver import Acquire
from .election import Leadership, campaign, leader
from .election_watch import Observer
from .lock import CrossSlotSet, Lock, give_back

T = TypeVar("T")


# unasync: asyncio only
H = TypeVar("H", bound="Lock | CrossSlotSet")


class PendingLock(Generic[H]):
    """What `lock()` / `try_lock()` return: await it for a Lock, or `async with` it (acquired
    on entry, released on exit); `lock_all()` / `try_lock_all()`'s gives a Lock or a
    CrossSlotSet. Arguments were already checked when it was made."""

    def __init__(self, acquire: Callable[[], Coroutine[Any, Any, H]]) -> None:
        self._acquire = acquire
        self._lock: H | None = None

    def __await__(self) -> Generator[Any, None, H]:
        return self._acquire().__await__()

    async def __aenter__(self) -> H:
        self._lock = await self._acquire()
        return self._lock

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._lock is not None
        await self._lock.__aexit__(kind, error, trace)


# unasync: end
class LockManager:
    # unasync: asyncio only
    """Holds the nodes and options; hands out locks. Use it within one event loop; connects
    lazily. The options are those of dlock.LockManager; nodes may be redis.asyncio.Redis
    clients where the sync manager takes redis.Redis ones."""

    # unasync: sync only
    # """Holds the nodes and options; hands out locks. Thread-safe; connects lazily, so nodes
    # may be down now and come up later. Defaults as in docs/python.md.
    #
    # `nodes`: URLs (redis://, rediss://, unix://, redis+cluster://, rediss+cluster://,
    # redis+sentinel://, rediss+sentinel://) or redis.Redis clients, each one quorum node. The
    # ssl_* keywords (redis-py's) apply to every TLS node; username / password to every node
    # whose URL has no credentials; sentinel_username / sentinel_password to the sentinels. A
    # bad file or combination is a ValueError here, before any node is asked.
    #
    # Durations are seconds, as in redis-py (a float, or a datetime.timedelta for a TTL or a
    # wait): try_lock(ttl=10.0); lock(ttl=10.0, wait=30.0); with_lock(ttl=10.0, wait=30.0); a TTL
    # from 0.001 to 86400, one over 3600 given as a number warned about (dlock.UnitWarning: it is
    # probably milliseconds); timeout=0.05 per node call, ack_timeout=0.1. The table of every
    # client's units and defaults: docs/which-call.md."""
    # unasync: end

    def __init__(
        self,
        nodes: Sequence[str | Redis],
        *,
        timeout: float = 0.050,
        retry_count: int | None = None,
        retry_delay: float = 0.025,
        retry_jitter: float = 0.025,
        drift_factor: float = 0.01,
        drift_constant: float = 0.002,
        fencing: bool = True,
        wait_mode: WaitMode = "queue",
        max_hold: float | None = None,
        extend_interval: float | None = None,
        replica_ack: ReplicaAck = "auto",
        ack_timeout: float = 0.100,
        ssl_ca_certs: str | None = None,
        ssl_certfile: str | None = None,
        ssl_keyfile: str | None = None,
        ssl_cert_reqs: str | ssl.VerifyMode | None = "required",
        ssl_check_hostname: bool = True,
        ssl_password: str | None = None,
        username: str | None = None,
        password: str | None = None,
        sentinel_username: str | None = None,
        sentinel_password: str | None = None,
    ) -> None:
        endpoints = check_nodes(nodes, Nodes.client_type)
        self.options = Options(
            timeout=timeout,
            retry_count=retry_count,
            retry_delay=retry_delay,
            retry_jitter=retry_jitter,
            drift_factor=drift_factor,
            drift_constant=drift_constant,
            fencing=fencing,
            wait_mode=wait_mode,
            max_hold=max_hold,
            extend_interval=extend_interval,
            replica_ack=replica_ack,
            ack_timeout=ack_timeout,
        )
        reach = security(
            any(node.tls for node in endpoints),
            ssl_ca_certs=ssl_ca_certs,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            ssl_cert_reqs=ssl_cert_reqs,
            ssl_check_hostname=ssl_check_hostname,
            ssl_password=ssl_password,
            username=username,
            password=password,
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
        )
        self._clustered = any(isinstance(node, Seed) for node in endpoints)  # a set is then taken by slot group
        self._backend = Backend(Nodes(endpoints, self.options, reach), self.options)
        self._calls = Calls(self._backend)
        self._local_waits = LocalWaits()  # one server-side wait per resource

    @property
    def nodes(self) -> list[str]:
        return list(self._backend.nodes.names)

    def try_lock(
        self,
        resource: str,
        ttl: Duration = 10.0,
        *,
        watchdog: bool = False,
        shared: bool = False,
        limit: int | None = None,
    ) -> PendingLock[Lock]:
        """One attempt with a fresh owner. Raises LockContended, NoQuorum, ValidityExpired or
        KindRefused (WrongKindError). `shared=True`: a shared hold; `limit=k`: a permit of a
        semaphore of limit k (not both); neither: exclusive."""
        resource, ttl_ms, kind = check_resource(resource), check_lease(ttl, self.options), check_kind(shared, limit)
        return PendingLock(lambda: self._try_lock(resource, ttl_ms, watchdog, kind))

    def lock(
        self,
        resource: str,
        ttl: Duration = 10.0,
        wait: Duration = 30.0,
        *,
        watchdog: bool = False,
        shared: bool = False,
        limit: int | None = None,
    ) -> PendingLock[Lock]:
        # unasync: asyncio only
        """Waits up to `wait` seconds (queued on the nodes by default). Raises LockTimeout,
        NoQuorum, ValidityExpired or KindRefused. Cancelling it while it waits withdraws the
        wait. `shared` and `limit` as for try_lock."""
        # unasync: sync only
        # """Waits up to `wait` seconds: queued on the nodes in ticket order (wait_mode "queue",
        # the default), or retrying with delay + jitter ("retry"). Raises LockTimeout (a
        # LockContended) when others held it throughout, NoQuorum, ValidityExpired, or
        # KindRefused (never retried: WrongKindError when held as another kind). `shared=True`:
        # a shared hold of the lock; `limit=k`: a permit of a semaphore of limit k (not both)."""
        # unasync: end
        resource, ttl_ms, wait = check_resource(resource), check_lease(ttl, self.options), check_wait(wait)
        kind = check_kind(shared, limit)
        return PendingLock(lambda: self._lock(resource, ttl_ms, wait, watchdog, kind))

    def try_lock_all(
        self,
        resources: Sequence[str],
        ttl: Duration = 10.0,
        *,
        watchdog: bool = False,
        modes: Sequence[str] | None = None,
    ) -> PendingLock[Lock | CrossSlotSet]:
        # unasync: asyncio only
        """As try_lock, for several resources at once, all or nothing (`modes`: one "x" or "s"
        per resource; None: all exclusive): the Lock (`.resources`) holds every one of them under
        one token, or none is held. On a redis+cluster:// node, keys of several slots are taken
        slot group by slot group: a CrossSlotSet."""
        # unasync: sync only
        # """One attempt to take every one of `resources` at once, all or nothing (DLOCK.ACQUIREALL
        # on each node: one token for the set, or nothing): a Lock (`.resources` names them) held
        # and released, extended, fenced and watched as one lock. `modes`: one "x" (exclusive) or
        # "s" (shared) per resource, None for all exclusive; the quorum is a majority either way.
        # ValueError for no resource, one given twice, more than 16, modes not one x/s each; then
        # as try_lock. With a redis+cluster:// node, keys of several slots are taken slot group by
        # slot group, one attempt each in slot order (docs/multi.md): a CrossSlotSet, or the first
        # group's failure with the groups already taken given back."""
        # unasync: end
        keys, ttl_ms = check_set(resources, modes), check_lease(ttl, self.options)
        return PendingLock(lambda: self._take_set(keys, ttl_ms, None, watchdog))

    def lock_all(
        self,
        resources: Sequence[str],
        ttl: Duration = 10.0,
        wait: Duration = 30.0,
        *,
        watchdog: bool = False,
        modes: Sequence[str] | None = None,
    ) -> PendingLock[Lock | CrossSlotSet]:
        # unasync: asyncio only
        """As lock, for several resources at once, all or nothing (see try_lock_all)."""
        # unasync: sync only
        # """Waits up to `wait` seconds to take every one of `resources` at once, all or nothing:
        # queued on every key of each node at once (holding none meanwhile, so two sets asked in
        # opposite orders cannot deadlock), or retrying ("retry" wait mode). Raises as lock();
        # arguments as try_lock_all. On a redis+cluster:// node keys of several slots are taken
        # slot group by slot group within the one `wait` (a CrossSlotSet; docs/multi.md)."""
        # unasync: end
        keys, ttl_ms, wait = check_set(resources, modes), check_lease(ttl, self.options), check_wait(wait)
        return PendingLock(lambda: self._take_set(keys, ttl_ms, wait, watchdog))

    async def _take_set(self, keys: KeySet, ttl_ms: int, wait: float | None, watchdog: bool) -> Lock | CrossSlotSet:
        """A set: one lock on each node, or, with a Cluster node and keys of several slots, its
        slot groups one after the other in slot order within the one `wait` (None: one attempt
        each), the groups taken given back when one fails, its error raised unchanged."""
        deadline = None if wait is None else time.monotonic() + wait
        parts = split(keys) if self._clustered else [keys]
        if len(parts) == 1:
            if deadline is None:
                return await self._try_lock(keys, ttl_ms, watchdog, Kind())
            return await self._lock(keys, ttl_ms, max(0.0, deadline - time.monotonic()), watchdog, Kind())
        held: list[Lock] = []
        try:
            for part in parts:
                if deadline is None:
                    lock = await self._try_lock(part, ttl_ms, watchdog, Kind())
                else:
                    lock = await self._lock(part, ttl_ms, max(0.0, deadline - time.monotonic()), watchdog, Kind())
                held.append(lock)
        except BaseException:
            await give_back(held)  # nothing is held across a failed group
            raise
        taken = CrossSlotSet(keys.keys, held)
        if watchdog:
            taken.start_watchdog()  # each group's own has run since it was taken
        return taken

    async def with_lock(
        self,
        resource: str,
        work: Callable[[Lock], Awaitable[T]],
        ttl: Duration = 10.0,
        wait: Duration = 30.0,
        *,
        shared: bool = False,
        limit: int | None = None,
    ) -> T:
        # unasync: asyncio only
        """Awaits `work(lock)` while a watchdog keeps the lock extended, then releases it; raises
        LockLost instead of returning if the lock was lost meanwhile."""
        # unasync: sync only
        # """Runs `work(lock)` while a watchdog keeps the lock extended, then releases it. Raises
        # LockLost instead of returning if the lock was lost meanwhile (`work` can watch
        # `lock.lost` to stop early)."""
        # unasync: end
        async with self.lock(resource, ttl, wait, watchdog=True, shared=shared, limit=limit) as lock:
            return await work(lock)

    async def _try_lock(self, resource: Resource, ttl_ms: int, watchdog: bool, kind: Kind) -> Lock:
        return await self._take(
            Acquire(self._calls, resource, ttl_ms, time.monotonic(), kind, self._no_wait()), watchdog, True
        )

    async def _lock(self, resource: Resource, ttl_ms: int, wait: float, watchdog: bool, kind: Kind) -> Lock:
        deadline = time.monotonic() + wait
        # A set, a shared hold and a permit wait on the nodes each time (those are granted together).
        if not self._queues() or not isinstance(resource, str) or kind != Kind():
            policy = QUEUE if self._queues() else self._no_wait()
            return await self._take(Acquire(self._calls, resource, ttl_ms, deadline, kind, policy), watchdog, False)
        async with self._local_waits.turn(cmd.name_of(resource), wait) as turn:
            if not turn:  # the wait ran out in the process: one try, answered as a wait that ran out
                acquire = Acquire(self._calls, resource, ttl_ms, time.monotonic(), kind, self._no_wait())
                return await self._take(acquire, watchdog, True, waited=True)
            return await self._take(Acquire(self._calls, resource, ttl_ms, deadline, kind, QUEUE), watchdog, False)

    async def _take(self, acquire: Acquire, watchdog: bool, once: bool, waited: bool | None = None) -> Lock:
        """Runs the attempts (one when `once`: try_lock) and hands out the lock, or raises why not
        (a LockTimeout when it `waited`: by default, unless `once`)."""
        won, attempts = await acquire.run(once)
        if isinstance(won, AttemptFailed):
            needed = self._backend.needed(acquire.kind)
            waited = not once if waited is None else waited
            raise won.to_error(cmd.name_of(acquire.resource), needed, attempts, waited=waited) from None
        lock = Lock(self._calls, acquire.resource, won.owner, acquire.ttl_ms, won.grant, acquire.kind, won.released)
        return self._held(lock, watchdog)

    async def campaign(self, name: str, value: str = "", ttl: Duration = 10.0) -> Leadership:
        # unasync: asyncio only
        """As dlock.LockManager.campaign: the Leadership once elected."""
        # unasync: sync only
        # """Queues (fairly, on the nodes) to lead the election `name` with `value` (an address,
        # an id: at most 200 bytes) and returns the Leadership once elected, kept by a watchdog
        # extending every ttl/3. Waits as long as others lead; raises on anything but contention
        # (NoQuorum, WrongKindError). docs/election.md."""
        # unasync: end
        name, value = check_election(name, value)
        ttl_ms = check_lease(ttl, self.options)
        return await campaign(self._calls, name, value, ttl_ms, QUEUE if self._queues() else self._no_wait())

    async def leader(self, name: str) -> Leader | None:
        """Who leads the election `name` now (None: nobody), read from every node. NoQuorum
        when too few answered to tell; WrongKindError when `name` is a shared lock or a
        semaphore."""
        name, _ = check_election(name)
        return await leader(self._calls, name)

    def observe(self, name: str) -> Observer:
        # unasync: asyncio only
        """As dlock.LockManager.observe: an async iterator of the changes (`async for`)."""
        # unasync: sync only
        # """Follows who leads the election `name`, without polling: an iterator of each change
        # in order (a Leader, None when nobody leads, NoQuorum as an item when too few nodes
        # answer). Each node is asked with a blocking DLOCK.OBSERVE on a connection of its own."""
        # unasync: end
        name, _ = check_election(name)
        return Observer(self._calls, name)

    async def status(self, resource: str) -> list[NodeStatus]:
        """DLOCK.STATUS on every node: each node's view (held, free, or why unreachable)."""
        resource = check_resource(resource)
        replies = await self._backend.nodes.everywhere(cmd.status(resource))
        return [node_status(name, r) for name, r in zip(self.nodes, replies, strict=True)]

    async def top(self, rows: int = 20) -> list[NodeTop]:
        """Each node's hot locks (DLOCK.TOP, ACL @dangerous): resources with waiters, longest
        queue first, and held locks with holder, token and lease left; at most `rows` of each.
        The keyspace is walked in steps of 1000 keys, each a bounded call. A redis+cluster://
        node is refused by name (list each master instead)."""
        walk = Walk(self.nodes, check_rows(rows))
        while calls := walk.requests():
            walk.take(calls, await self._backend.nodes.fan_out(calls))
        return walk.result()

    async def release_owner(self, resource: str, owner: str, *, limit: int | None = None) -> int:
        # unasync: asyncio only
        """As dlock.LockManager.release_owner: how many nodes released it."""
        # unasync: sync only
        # """Releases `owner`'s lock (taken elsewhere) on all nodes; how many released it.
        # NoQuorum naming the unreachable nodes if fewer than a quorum answered (a majority; for
        # a semaphore's permit, `limit=k`, its larger quorum)."""
        # unasync: end
        resource, owner = check_resource(resource), check_owner(owner)
        needed = self._backend.needed(Kind(limit=check_limit(limit)))
        tally = await self._calls.release(resource, owner)
        if tally.answered() < needed:
            raise tally.no_quorum(resource, needed)
        return tally.done

    async def extend_owner(self, resource: str, owner: str, ttl: Duration, *, limit: int | None = None) -> float:
        # unasync: asyncio only
        """As dlock.LockManager.extend_owner: the new validity in seconds."""
        # unasync: sync only
        # """Extends `owner`'s lock on all nodes; the new validity in seconds. NoQuorum if too few
        # nodes answered, LockLost if a quorum answered and did not extend (a majority; for a
        # semaphore's permit, `limit=k`, its larger quorum)."""
        # unasync: end
        resource, owner = check_resource(resource), check_owner(owner)
        ttl_ms = check_lease(ttl, self.options)
        needed = self._backend.needed(Kind(limit=check_limit(limit)))
        result = await self._calls.extend(resource, owner, ttl_ms, needed)
        if isinstance(result, float):
            return max(0.0, result - time.monotonic())
        raise result.extend_error(resource, needed)

    def _queues(self) -> bool:
        """Tickets are only safe with the commit round: queue mode needs fencing on several nodes."""
        return self.options.wait_mode == "queue" and (self._backend.size() == 1 or self.options.fencing)

    def _no_wait(self) -> Policy:
        """Attempts without a server wait hold once a quorum granted, without a commit: with
        fencing on and several nodes the hold owes it, paid when its token is first read
        (Lock.token, _pure/commit.py)."""
        return Policy(queue=False, commit=False)

    def _held(self, lock: Lock, watchdog: bool) -> Lock:
        if watchdog:
            lock.start_watchdog()
        return lock

    async def close(self) -> None:
        # unasync: sync only
        # """Closes every connection (locks still held run out at their TTL)."""
        # unasync: end
        await self._backend.nodes.close()

    async def __aenter__(self) -> LockManager:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()


# unasync: sync only
# __all__ = ["Lock", "LockLost", "LockManager"]
# unasync: end
