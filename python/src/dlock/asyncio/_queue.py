"""`lock()` in queue mode over the asyncio transport: the async twin of dlock/_sync_queue.py
(client/src/waiting.rs), each node's wait a task, their replies fed to the machine of
_acquisition.py. Cancelling lock() withdraws the round everywhere before the cancellation goes
on, and waits still out release any grant they bring back."""

from __future__ import annotations

import asyncio
import time

from .. import _acquisition as machine
from .. import _commands as cmd
from .._timing import draw_ticket, ms, new_owner, quorum, retry_pause, round_owner, validity
from .._verdicts import CONTENDED, EXPIRED, NO_QUORUM, AttemptFailed, Grant
from ..errors import NodeFailure
from ._round import Rounds, in_background, release_shielded


class Won:
    def __init__(self, owner: str, grant: Grant, released: asyncio.Event) -> None:
        self.owner, self.grant, self.released = owner, grant, released


class QueueWait:
    """One lock() call in queue mode."""

    def __init__(self, rounds: Rounds, resource: str, ttl_ms: int, deadline: float) -> None:
        self.rounds = rounds
        self.resource = resource
        self.ttl_ms = ttl_ms
        self.deadline = deadline
        self.ticket: int | None = draw_ticket() if rounds.size() > 1 else None

    async def acquire(self) -> tuple[Won | AttemptFailed, int]:
        attempts = 0
        opts = self.rounds.opts
        while True:
            attempts += 1
            try:
                return await Attempt(self, new_owner()).run(), attempts
            except AttemptFailed as failure:
                pause = retry_pause(opts)
                out_of_time = time.monotonic() + pause >= self.deadline
                too_many = opts.retry_count is not None and attempts > opts.retry_count
                if failure.kind == CONTENDED or out_of_time or too_many:
                    return failure, attempts
                await asyncio.sleep(pause)

    async def check_lease(self, owner: str, token: int, lease_from: float, released: asyncio.Event) -> Won:
        """As in the sync driver: validity from the request that last set the TTL; with one node
        a late grant is renewed once."""
        opts, single = self.rounds.opts, self.rounds.size() == 1
        left = validity(self.ttl_ms, lease_from, time.monotonic(), opts)
        if left is not None and (not single or left * 2000 >= self.ttl_ms):
            return Won(owner, Grant(token, time.monotonic() + left), released)
        if single:
            renewed_from = time.monotonic()
            reply = (await self.rounds.nodes.fan_out([(0, cmd.extend(self.resource, owner, self.ttl_ms))]))[0]
            left = validity(self.ttl_ms, renewed_from, time.monotonic(), opts)
            if reply == 1 and left is not None:
                return Won(owner, Grant(token, time.monotonic() + left), released)
        released.set()
        await release_shielded(self.rounds, self.resource, owner)
        raise AttemptFailed(EXPIRED)


class Attempt:
    """One attempt: rounds of wait and commit until held, impossible, or the deadline."""

    def __init__(self, wait: QueueWait, base: str) -> None:
        self.wait = wait
        self.base = base
        self.nodes = wait.rounds.size()
        self.machine, self.steps = machine.Acquisition.start(self.nodes)
        self.events: asyncio.Queue[tuple[machine.Event, object | None]] = asyncio.Queue()
        self.over = False
        self.released = asyncio.Event()
        self.held = False
        self.why: list[object | None] = [None] * self.nodes
        self.lease_from = time.monotonic()

    async def run(self) -> Won:
        end = max(self.wait.deadline, time.monotonic() + self.wait.rounds.nodes.call_bound)
        try:
            while True:
                for step in self.steps:
                    token = await self.perform(step)
                    if token is not None:
                        return await self.held_lease(token)
                self.steps = await self.next_steps(end)
        finally:
            await self.finish()

    async def held_lease(self, token: int) -> Won:
        """Held: check the lease. Cancelled meanwhile, the caller never gets the lock: release it."""
        owner = round_owner(self.base, self.machine.round)
        try:
            return await self.wait.check_lease(owner, token, self.lease_from, self.released)
        except asyncio.CancelledError:
            self.released.set()
            await release_shielded(self.wait.rounds, self.wait.resource, owner)
            raise

    async def next_steps(self, end: float) -> list[machine.Step]:
        try:
            event, why = await asyncio.wait_for(self.events.get(), max(0.0, end - time.monotonic()))
        except asyncio.TimeoutError:
            raise self.failure() from None
        if isinstance(event, machine.Unavailable) and event.round == self.machine.round and why is not None:
            if isinstance(why, NodeFailure):
                self.spawn(event.node, event.round, retry_pause(self.wait.rounds.opts))
            self.why[event.node] = why
        return self.machine.on(event)

    async def perform(self, step: machine.Step) -> int | None:
        w = self.wait
        if isinstance(step, machine.Wait):
            self.lease_from = time.monotonic()
            self.why = [None] * self.nodes
            for node in step.nodes:
                self.spawn(node, step.round, 0.0)
        elif isinstance(step, machine.Fence):
            self.lease_from = time.monotonic()
            fence = cmd.fence(w.resource, round_owner(self.base, step.round), step.token, w.ttl_ms)
            replies = await w.rounds.nodes.fan_out([(n, fence) for n in step.nodes])
            for node, reply in zip(step.nodes, replies, strict=False):
                self.events.put_nowait((machine.Fenced(node, step.round, reply == 1), None))
        elif isinstance(step, machine.Release):
            await w.rounds.release_on(w.resource, round_owner(self.base, step.round), step.nodes)
        elif isinstance(step, machine.Held):
            self.held = True
            return step.token
        else:
            raise self.failure()
        return None

    def spawn(self, node: int, round_: int, pause: float) -> None:
        in_background(self.wait_on(node, round_, pause))

    async def wait_on(self, node: int, round_: int, pause: float) -> None:
        """ACQUIRE ... WAIT ... [TICKET] on `node` as the owner of `round_` (a task). A wait that
        is asked again (after a failure) is skipped if the attempt ended meanwhile."""
        if pause:
            await asyncio.sleep(pause)
            if self.over:
                return
        w = self.wait
        left = max(0.0, w.deadline - time.monotonic())
        request = cmd.wait(w.resource, round_owner(self.base, round_), w.ttl_ms, ms(left), w.ticket)
        reply = await w.rounds.nodes.call_blocking(node, request, left + w.rounds.opts.timeout)
        if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
            await self.deliver(machine.Granted(node, round_, reply), None)
        elif reply is None:
            await self.deliver(machine.Unavailable(node, round_), CONTENDED)
        elif isinstance(reply, NodeFailure):
            await self.deliver(machine.Unavailable(node, round_), reply)
        else:
            failure = NodeFailure(w.rounds.nodes.names[node], f"unexpected reply {reply!r}")
            await self.deliver(machine.Unavailable(node, round_), failure)

    async def deliver(self, event: machine.Event, why: object | None) -> None:
        if not self.over:
            self.events.put_nowait((event, why))
        else:
            await self.release_if_stale(event)

    async def release_if_stale(self, event: machine.Event) -> None:
        """A grant after the attempt ended: the holder's own (released with it) unless the holder
        has released, the round is an old one, or the attempt did not hold."""
        if not isinstance(event, machine.Granted):
            return
        if not (self.held and event.round == self.machine.round and not self.released.is_set()):
            w = self.wait
            await w.rounds.release_on(w.resource, round_owner(self.base, event.round), [event.node])

    async def finish(self) -> None:
        """Without a hold the round is withdrawn everywhere, even when lock() is cancelled."""
        self.over = True
        if not self.held:
            owner = round_owner(self.base, self.machine.round)
            await release_shielded(self.wait.rounds, self.wait.resource, owner)
        while not self.events.empty():
            await self.release_if_stale(self.events.get_nowait()[0])

    def failure(self) -> AttemptFailed:
        failures = [why for why in self.why if isinstance(why, NodeFailure)]
        if self.nodes - len(failures) >= quorum(self.nodes):
            return AttemptFailed(CONTENDED)
        return AttemptFailed(NO_QUORUM, failures)
