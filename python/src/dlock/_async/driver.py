"""`lock()` in queue mode (client/src/waiting.rs): the waiting happens on the nodes (DLOCK.ACQUIRE
... WAIT ... TICKET), driven by the machine of dlock/_acquisition.py.

- One ticket per lock() call (wall-clock us); with one node no ticket (plain FIFO, and a grant
  that is never committed must not be revocable).
- Round r waits as owner `<base>:<r>`, each node's wait on a connection of its own; their replies
  are fed to the machine as they come (Waits: one selector read from the caller's thread in the
  sync flavour, a task per wait in asyncio's).
- The commit (FENCE ... PX ttl) starts the lease afresh: waiting does not eat it.
- No quorum possible (nodes down): release, pause, new attempt with the same ticket.
- The kind option (SHARED, LIMIT k) goes on every wait of every round; a node refusing the kind
  (WRONGKIND, ...) ends the lock() call at once, never retried.
- At the deadline, or when the caller is interrupted (Ctrl-C, a cancelled task), the round is
  withdrawn everywhere (RELEASE of its owner) before the interruption goes on; waits still out
  end and any grant they bring back is released."""

from __future__ import annotations

import asyncio
import time

from .._pure import acquisition as machine
from .._pure import commands as cmd
from .._pure.kind import Kind
from .._pure.replies import NodeTimeout
from .._pure.timing import draw_ticket, ms, new_owner, retry_pause, round_owner, validity
from .._pure.verdicts import CONTENDED, EXPIRED, NO_QUORUM, REFUSED, AttemptFailed, Grant, KindRefusal, unexpected
from .._transport.aio.concurrency import shielded, sleep
from .._transport.aio.waits import Answer, Waits
from ..errors import NodeFailure
from .round import Rounds


class Won:
    """A lock won in queue mode: its owner, grant, and the flag to raise on release."""

    def __init__(self, owner: str, grant: Grant, released: asyncio.Event) -> None:
        self.owner, self.grant, self.released = owner, grant, released


class QueueWait:
    """One lock() call in queue mode."""

    def __init__(self, rounds: Rounds, resource: str, ttl_ms: int, deadline: float, kind: Kind) -> None:
        self.rounds = rounds
        self.resource = resource
        self.ttl_ms = ttl_ms
        self.deadline = deadline
        self.kind = kind
        self.needed = rounds.needed(kind)
        self.ticket: int | None = draw_ticket() if rounds.size() > 1 else None

    async def acquire(self) -> tuple[Won | AttemptFailed, int]:
        """Waits until held or the deadline: what it came to, and how many attempts it took."""
        attempts = 0
        opts = self.rounds.opts
        while True:
            attempts += 1
            try:
                if self.rounds.size() == 1:
                    return await self.single(new_owner()), attempts
                return await Attempt(self, new_owner()).run(), attempts
            except AttemptFailed as failure:
                pause = retry_pause(opts)
                out_of_time = time.monotonic() + pause >= self.deadline
                too_many = opts.retry_count is not None and attempts > opts.retry_count
                if failure.kind in (CONTENDED, REFUSED) or out_of_time or too_many:
                    return failure, attempts
                await sleep(pause)

    async def single(self, base: str) -> Won:
        """One node: the machine comes down to "granted is held", so the wait is made directly
        (no hand-off per grant). The client keeps the deadline itself: a node notices blocked
        clients' timeouts only every 1/hz s. Without a grant the wait is withdrawn (RELEASE: it
        also frees a grant whose reply was cut off at the deadline)."""
        owner = round_owner(base, 0)
        lease_from = time.monotonic()
        left = self.deadline - lease_from
        request = cmd.wait(self.resource, owner, self.ttl_ms, ms(left), None, self.kind.option())
        try:
            reply = await self.rounds.nodes.call_blocking(0, request, max(left, self.rounds.opts.timeout))
        except BaseException:  # interrupted: withdraw the wait before going on
            await self.withdraw(owner)
            raise
        if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
            return await self.held(owner, reply, lease_from, asyncio.Event())
        await self.withdraw(owner)
        if reply is None or (isinstance(reply, NodeTimeout) and time.monotonic() >= self.deadline):
            raise AttemptFailed(CONTENDED)  # others held it until the deadline
        if isinstance(reply, KindRefusal):
            raise AttemptFailed(REFUSED, [reply])
        failure = reply if isinstance(reply, NodeFailure) else unexpected(self.rounds.nodes.names[0], reply)
        raise AttemptFailed(NO_QUORUM, [failure])

    async def withdraw(self, owner: str) -> None:
        """RELEASE of `owner` on every node, which an interruption cannot stop halfway."""
        await shielded(self.rounds.release(self.resource, owner))

    async def held(self, owner: str, token: int, lease_from: float, released: asyncio.Event) -> Won:
        """The lock, if its lease checks out. Otherwise, or when interrupted meanwhile (the caller
        then never gets it), `released` is set and the lock released everywhere."""
        try:
            return await self.check_lease(owner, token, lease_from, released)
        except BaseException:
            released.set()  # waits still out now know a grant they bring back is stale
            await self.withdraw(owner)
            raise

    async def check_lease(self, owner: str, token: int, lease_from: float, released: asyncio.Event) -> Won:
        """Held: validity counts from the request that last set the TTL. With one node that is
        the wait itself, whose grant may have come long after it was sent: then the TTL is renewed
        once, and validity counts from the renewal."""
        opts, single = self.rounds.opts, self.rounds.size() == 1
        left = validity(self.ttl_ms, lease_from, time.monotonic(), opts)
        if left is not None and (not single or left * 2000 >= self.ttl_ms):
            return Won(owner, Grant(token, time.monotonic() + left), released)
        if single:
            renewed_from = time.monotonic()
            replies = await self.rounds.nodes.fan_out([(0, cmd.extend(self.resource, owner, self.ttl_ms))])
            left = validity(self.ttl_ms, renewed_from, time.monotonic(), opts)
            if replies[0] == 1 and left is not None:
                return Won(owner, Grant(token, time.monotonic() + left), released)
        raise AttemptFailed(EXPIRED)


class Attempt:
    """One attempt: rounds of wait and commit until held, impossible, or the deadline. Its waits
    are read as they answer (Waits); those still out when the attempt ends are followed to
    their end."""

    def __init__(self, wait: QueueWait, base: str) -> None:
        self.wait = wait
        self.base = base
        self.nodes = wait.rounds.size()
        self.machine, self.steps = machine.Acquisition.start(self.nodes, wait.needed)
        self.waits = Waits(wait.rounds.nodes)
        self.ready: list[tuple[machine.Event, object | None]] = []  # replies not fed yet
        self.timers: list[tuple[float, int, int]] = []  # (when, node, round): waits to ask again
        self.released = asyncio.Event()
        self.held = False
        self.why: list[object | None] = [None] * self.nodes
        self.lease_from = time.monotonic()

    async def run(self) -> Won:
        bound = self.wait.rounds.nodes.call_bound
        end = max(self.wait.deadline, time.monotonic() + bound)  # a zero wait still hears its answers once
        try:
            while True:
                for step in self.steps:
                    token = await self.perform(step)
                    if token is not None:
                        owner = round_owner(self.base, self.machine.round)
                        return await self.wait.held(owner, token, self.lease_from, self.released)
                self.steps = await self.next_steps(end)
        finally:
            await self.finish()

    async def next_steps(self, end: float) -> list[machine.Step]:
        """Feeds the next reply to the machine; waits for one (or a timer) if none is in."""
        if self.ready:
            event, why = self.ready.pop(0)
            return self.feed(event, why)
        now = time.monotonic()
        if now >= end:
            raise self.failure()
        for when, node, round_ in [t for t in self.timers if t[0] <= now]:
            self.timers.remove((when, node, round_))
            if round_ == self.machine.round:
                self.send_wait(node, round_)
        wake = min([end, *(when for when, _, _ in self.timers)])
        for pending, reply in await self.waits.answers(wake - now):
            self.ready.append(self.event(pending.node, pending.round, reply))
        return []

    def feed(self, event: machine.Event, why: object | None) -> list[machine.Step]:
        if isinstance(why, KindRefusal):
            raise AttemptFailed(REFUSED, [why])  # asking again cannot change it
        if isinstance(event, machine.Unavailable) and event.round == self.machine.round and why is not None:
            if isinstance(why, NodeFailure):  # asked again after the retry pause, while the round lasts
                self.timers.append((time.monotonic() + retry_pause(self.wait.rounds.opts), event.node, event.round))
            self.why[event.node] = why
        return self.machine.on(event)

    async def perform(self, step: machine.Step) -> int | None:
        """Does what `step` asks; the token once held."""
        w = self.wait
        if isinstance(step, machine.Wait):
            self.lease_from = time.monotonic()
            self.why = [None] * self.nodes
            for node in step.nodes:
                self.send_wait(node, step.round)
        elif isinstance(step, machine.Fence):
            self.lease_from = time.monotonic()
            await self.fence(step)
        elif isinstance(step, machine.Release):
            await w.rounds.release_on(w.resource, round_owner(self.base, step.round), step.nodes)
        elif isinstance(step, machine.Held):
            self.held = True
            return step.token
        else:
            raise self.failure()
        return None

    def send_wait(self, node: int, round_: int) -> None:
        """ACQUIRE ... WAIT ... [TICKET] on `node` as the owner of `round_`."""
        w = self.wait
        left = max(0.0, w.deadline - time.monotonic())
        owner = round_owner(self.base, round_)
        request = cmd.wait(w.resource, owner, w.ttl_ms, ms(left), w.ticket, w.kind.option())
        failure = self.waits.send(node, round_, request, left + w.rounds.opts.timeout)
        if failure is not None:
            self.ready.append((machine.Unavailable(node, round_), failure))

    async def fence(self, step: machine.Fence) -> None:
        """FENCE ... PX ttl on the granting nodes; the answers are fed like the others."""
        w = self.wait
        fence = cmd.fence(w.resource, round_owner(self.base, step.round), step.token, w.ttl_ms)
        replies = await w.rounds.nodes.fan_out([(n, fence) for n in step.nodes])
        for node, reply in zip(step.nodes, replies, strict=True):
            self.ready.append((machine.Fenced(node, step.round, reply == 1), None))

    def event(self, node: int, round_: int, reply: object) -> tuple[machine.Event, object | None]:
        """A wait's reply as the machine's event, and why it did not grant."""
        if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
            return machine.Granted(node, round_, reply), None
        if reply is None:
            return machine.Unavailable(node, round_), CONTENDED
        if isinstance(reply, NodeFailure):
            return machine.Unavailable(node, round_), reply
        return machine.Unavailable(node, round_), unexpected(self.wait.rounds.nodes.names[node], reply)

    async def release_if_stale(self, event: machine.Event) -> None:
        """A grant that came after the attempt ended: the holder's own (released with it) unless
        the holder has released, the round is an old one, or the attempt did not hold."""
        if not isinstance(event, machine.Granted):
            return
        current = self.held and event.round == self.machine.round and not self.released.is_set()
        if not current:
            w = self.wait
            await w.rounds.release_on(w.resource, round_owner(self.base, event.round), [event.node])

    async def release_late(self, answer: Answer) -> None:
        pending, reply = answer
        await self.release_if_stale(self.event(pending.node, pending.round, reply)[0])

    async def finish(self) -> None:
        """Ends the attempt. Without a hold the round is withdrawn everywhere (its waits answer
        nil, its grants are freed), even when the caller is interrupted; held, the waits still
        queued stay, so the other nodes too grant the lock to its holder. Either way they are
        followed to their end and any grant they bring back stale is released."""
        if not self.held:
            await self.wait.withdraw(round_owner(self.base, self.machine.round))
        for event, _ in self.ready:
            await self.release_if_stale(event)
        await self.waits.drain_later(self.release_late)

    def failure(self) -> AttemptFailed:
        """No quorum this round: too few reachable nodes is no quorum; else contended."""
        failures = [why for why in self.why if isinstance(why, NodeFailure)]
        if self.nodes - len(failures) >= self.wait.needed:
            return AttemptFailed(CONTENDED)
        return AttemptFailed(NO_QUORUM, failures)
