# Generated from src/dlock/_async/driver.py by python/tools/unasync.py: do not edit. Edit that file,
# then run `python tools/unasync.py` in python/ (`make python-test` checks it is up to date).
"""Takes a lock over the network (client/src/driver.rs): runs attempts (dlock/_pure/attempt.py,
every decision) by sending what their actions ask, feeding the replies back, and keeping the
time.

- try_lock is one attempt that does not wait on the nodes; lock runs attempts until one holds or
  `another_attempt` says stop: queued on the nodes (the default), or without a server wait and
  with the retry pause between attempts (wait_mode "retry"). An attempt without a server wait
  holds once a quorum granted, uncommitted: with fencing on and several nodes the hold owes its
  commit (_pure/commit.py), which the lock pays when its token is first read (lock.py).
- Queue mode draws one ticket per lock() call (wall-clock us); with one node no ticket (plain
  FIFO, and a grant that is never committed must not be revocable). Each wait goes on a
  connection of its own (Waits: one selector read from the caller's thread in the sync
  flavour, a task per wait in asyncio's); the plain asks of an attempt without a server wait go
  out together.
- Round r of an attempt asks as owner `<base>:<r>`, each attempt under a new base, so a late
  RELEASE of an abandoned round cannot free a later one. A campaign appends ` <value>` (its
  label): the value then travels with every grant (docs/election.md).
- A queued attempt keeps the deadline itself (a node notices a wait's timeout only at its next
  tick) and gets at least one whole call, so a zero wait still asks once and hears the answer.
- When the attempt ends without the lock, at the deadline or when the caller is interrupted
  (Ctrl-C, a cancelled task), its round is withdrawn everywhere (RELEASE of its owner) before
  the interruption goes on; requests still out end in the background, where `on_late` says
  which grants they bring to release."""

from __future__ import annotations

import threading
import time

from .._pure import commands as cmd
from .._pure.ack import TIMEOUT_RESOLUTION
from .._pure.attempt import (
    Action,
    Ask,
    AskAgain,
    Attempt,
    Failed,
    Fence,
    Held,
    Policy,
    Release,
    another_attempt,
    lease,
)
from .._pure.commands import Resource
from .._pure.commit import owed
from .._pure.kind import Kind
from .._pure.timing import draw_ticket, ms, new_owner, retry_pause, round_owner, validity
from .._pure.verdicts import EXPIRED, AttemptFailed, Grant, SetupRefusal, ask_reply
from .._transport.sync.concurrency import shielded, sleep
from .._transport.sync.waits import Answer, Waits
from ..errors import NodeFailure
from .calls import Calls

#: What a request left running brings back: ("reply", node, round, reply), ("fenced", node,
#: round, why not or None), or ("pause", node, round) once the retry pause before an ask is over.
Input = tuple[str, int, int, object]


class Won:
    """A lock won: its owner, grant, and the flag to raise on release (requests of the
    acquisition still out then know a grant they bring is stale)."""

    def __init__(self, owner: str, grant: Grant, released: threading.Event) -> None:
        self.owner, self.grant, self.released = owner, grant, released


class Acquire:
    """One lock() or try_lock() call."""

    def __init__(
        self,
        calls: Calls,
        resource: Resource,
        ttl_ms: int,
        deadline: float,
        kind: Kind,
        policy: Policy,
        label: str = "",
    ) -> None:
        self.calls = calls
        self.backend = calls.backend  # the nodes and the options
        self.resource = resource  # one resource, or a set (taken with the *ALL commands)
        self.ttl_ms = ttl_ms
        self.deadline = deadline
        self.kind = kind
        self.policy = policy
        self.ticket: int | None = draw_ticket() if policy.queue and calls.backend.size() > 1 else None
        self.label = label  # appended to every round's owner: empty, or a campaign's ` <value>`
        # A hold of an attempt that does not wait on the nodes commits when its token is read.
        self.owes = owed(not policy.queue, calls.backend.size(), calls.backend.opts.fencing)
        # Nodes whose connection setup met a refusal waiting cannot cure (_pure/refusals.py): not
        # connected to again within this call, their refusal the answer to every ask.
        self.refused: dict[int, NodeFailure] = {}

    def run(self, once: bool) -> tuple[Won | AttemptFailed, int]:
        """Attempts until one holds (at most one when `once`): what it came to, and how many.
        ValueError once two nodes turn out to reach one server (_pure/identity.py): before any
        node is asked, or found meanwhile, whatever the nodes said (a lock won is given back)."""
        self.refuse()
        attempts = 0
        opts = self.backend.opts
        while True:
            attempts += 1
            try:
                won = Running(self, new_owner()).run()
            except AttemptFailed as failure:
                self.refuse()  # no other attempt can change it
                pause = retry_pause(opts)
                out_of_time = time.monotonic() + pause > self.deadline
                if once or not another_attempt(self.policy, failure, out_of_time, attempts, opts.retry_count):
                    return failure, attempts
                sleep(pause)
            else:
                self.backend.nodes.meet_all(self.backend.nodes.call_bound)  # a manager's first lock only
                if self.backend.nodes.refusal() is not None:
                    won.released.set()
                    self.withdraw(won.owner)
                self.refuse()
                return won, attempts

    def refuse(self) -> None:
        """ValueError (a bad argument: the node list) once two nodes turned out to reach one server."""
        refusal = self.backend.nodes.refusal()
        if refusal is not None:
            raise ValueError(refusal)

    def withdraw(self, owner: str) -> None:
        """RELEASE of `owner` on every node (but those refused for the call: nothing of it is
        there), which an interruption cannot stop halfway."""
        nodes = [n for n in range(self.backend.size()) if n not in self.refused]
        shielded(self.calls.release_on(self.resource, owner, nodes))

    def held(self, owner: str, token: int, holding: list[int], lease_from: float, released: threading.Event) -> Won:
        """The lock (`holding`: the nodes that granted `token`), if its lease checks out. Otherwise, or
        when interrupted meanwhile (the caller then never gets it), `released` is set and the lock
        released everywhere."""
        try:
            return self.check_lease(owner, token, holding, lease_from, released)
        except BaseException:
            released.set()  # requests still out now know a grant they bring is stale
            self.withdraw(owner)
            raise

    def check_lease(
        self, owner: str, token: int, holding: list[int], lease_from: float, released: threading.Event
    ) -> Won:
        """Held: what the lease comes to (attempt.lease), counted from the request that last set
        the TTL; with one node and too little left, renewed once first."""
        opts, nodes = self.backend.opts, self.backend.size()
        left = validity(self.ttl_ms, lease_from, time.monotonic(), opts)
        verdict = lease(nodes, left, self.ttl_ms, False)
        if verdict == "renew":
            renewed_from = time.monotonic()
            renewed = self.calls.renew(0, self.resource, owner, self.ttl_ms)
            left = validity(self.ttl_ms, renewed_from, time.monotonic(), opts) if renewed else None
            verdict = lease(nodes, left, self.ttl_ms, True)
        if verdict == "held" and left is not None:
            return Won(owner, Grant(token, time.monotonic() + left, tuple(holding), self.owes), released)
        raise AttemptFailed(EXPIRED)


class Running:
    """One attempt while its requests are out."""

    def __init__(self, acquire: Acquire, base: str) -> None:
        self.acquire = acquire
        self.base = base
        backend = acquire.backend
        self.core, self.first = Attempt.start(backend.size(), backend.needed(acquire.kind), acquire.policy)
        self.waits = Waits(backend.nodes)  # queued asks in flight
        self.asks: list[tuple[int, int]] = []  # plain asks to send together, (node, round)
        self.ready: list[Input] = []  # inputs in, not fed yet
        self.timers: list[tuple[float, int, int]] = []  # (when, node, round): asks after the pause
        self.released = threading.Event()
        self.settled = False  # held, or its round withdrawn already
        self.lease_from = time.monotonic()

    def owner(self, round_: int) -> str:
        """Round `round_`'s owner, with the campaign's label if any."""
        return round_owner(self.base, round_) + self.acquire.label

    def run(self) -> Won:
        nodes, queue = self.acquire.backend.nodes, self.acquire.policy.queue
        end = max(self.acquire.deadline, time.monotonic() + nodes.call_bound)  # a zero wait still asks once
        try:
            actions = self.first
            while True:
                held = self.perform(actions)
                if held is not None:
                    owner = self.owner(held.round)
                    holding = self.core.holding()
                    return self.acquire.held(owner, held.token, holding, self.lease_from, self.released)
                actions = self.next_actions(end if queue else None)
        finally:
            self.finish()

    def perform(self, actions: list[Action]) -> Held | None:
        """Does what `actions` ask; the hold, if one of them is it."""
        a = self.acquire
        for action in actions:
            if isinstance(action, Ask):
                self.lease_from = time.monotonic()
                for node in action.nodes:
                    self.ask(node, action.round)
            elif isinstance(action, AskAgain):
                if action.after_pause:
                    self.timers.append((time.monotonic() + retry_pause(a.backend.opts), action.node, action.round))
                else:
                    self.ask(action.node, action.round)
            elif isinstance(action, Fence):
                self.fence(action)
            elif isinstance(action, Release):
                a.calls.release_on(a.resource, self.owner(action.round), action.nodes)
            elif isinstance(action, Held):
                self.settled = True
                return action
            else:
                assert isinstance(action, Failed)
                self.settled = True  # the core withdrew the round just before
                raise self.told(action.error)
        return None

    def told(self, error: AttemptFailed) -> AttemptFailed:
        """An attempt ended by refusals for the call, with the failures of the replies in hand
        but not fed yet (the other nodes of one fan-out) added, so the error names them all."""
        if error.final:
            names = self.acquire.backend.nodes.names
            known = {failure.node for failure in error.failures}
            error.failures += [
                value
                for what, _, _, value in self.ready
                if what == "reply" and isinstance(value, NodeFailure) and value.node not in known
            ]
            error.failures.sort(key=lambda failure: names.index(failure.node))
        return error

    def ask(self, node: int, round_: int) -> None:
        """ACQUIRE ... WAIT ... [TICKET] on `node` as the owner of `round_`; a plain ACQUIRE goes
        out with the others in the next step."""
        a = self.acquire
        if node in a.refused:
            self.ready.append(("reply", node, round_, a.refused[node]))
            return
        if not a.policy.queue:
            self.asks.append((node, round_))
            return
        left = max(0.0, a.deadline - time.monotonic())
        owner = self.owner(round_)
        request = cmd.wait(a.resource, owner, a.ttl_ms, ms(left), a.ticket, a.kind)
        # A server notices a wait's timeout only at its next tick: its nil may come that late.
        allowed = left + TIMEOUT_RESOLUTION + a.backend.opts.timeout
        failure = self.waits.send(node, round_, request, allowed)
        if failure is not None:
            self.ready.append(("reply", node, round_, failure))

    def fence(self, action: Fence) -> None:
        """FENCE on the granting nodes (with PX ttl in queue mode, which starts the lease afresh);
        the answers are fed like the others."""
        a = self.acquire
        ttl_ms = a.ttl_ms if a.policy.queue else None
        if a.policy.queue:
            self.lease_from = time.monotonic()
        owner = self.owner(action.round)
        why_not = a.calls.fence(a.resource, owner, action.token, ttl_ms, action.nodes)
        self.ready.extend(("fenced", node, action.round, why) for node, why in zip(action.nodes, why_not, strict=True))

    def next_actions(self, end: float | None) -> list[Action]:
        """Feeds the next input to the core; waits for one (or a timer, or the end) if none is in."""
        if self.ready:
            return self.feed(self.ready.pop(0))
        if self.asks:
            self.send_asks()
            return []
        now = time.monotonic()
        if end is not None and now >= end:
            return self.core.on_deadline()
        due = [t for t in self.timers if t[0] <= now]
        if due:
            self.timers = [t for t in self.timers if t[0] > now]
            return [action for _, node, round_ in due for action in self.core.on_pause_over(node, round_)]
        if not self.waits and not self.timers:
            return self.core.on_deadline()  # nothing left to hear from
        wake = min([end if end is not None else now + 1.0, *(when for when, _, _ in self.timers)])
        for pending, reply in self.waits.answers(wake - now):
            self.ready.append(("reply", pending.node, pending.round, reply))
        return []

    def send_asks(self) -> None:
        """The plain asks gathered, sent at once (one per node; each round's owner)."""
        a, asks = self.acquire, self.asks
        self.asks = []
        for round_ in sorted({r for _, r in asks}):
            nodes = [n for n, r in asks if r == round_]
            owner = self.owner(round_)
            replies = a.calls.ask(a.resource, owner, a.ttl_ms, a.kind, nodes)
            self.ready.extend(("reply", node, round_, reply) for node, reply in zip(nodes, replies, strict=True))

    def feed(self, item: Input) -> list[Action]:
        """One input, into the core."""
        what, node, round_, value = item
        a = self.acquire
        if a.backend.nodes.refusal() is not None:
            # Two nodes reach one server: no reply counts, a grant brought is given back, and
            # the round is withdrawn everywhere, as at the deadline.
            late = self.core.on_late(node, round_, value, False) if what == "reply" else []
            return [*late, *self.core.on_deadline()]
        if what == "reply":
            reply = ask_reply(a.backend.nodes.names[node], value)
            if isinstance(reply, SetupRefusal):
                a.refused[node] = reply
            return self.core.on_reply(node, round_, reply, time.monotonic() >= a.deadline)
        if what == "fenced":
            valid = validity(a.ttl_ms, self.lease_from, time.monotonic(), a.backend.opts) is not None
            assert value is None or isinstance(value, NodeFailure)
            return self.core.on_fenced(node, round_, value, valid)
        return self.core.on_pause_over(node, round_)

    def release_late(self, answer: Answer) -> None:
        """A reply of a wait still out once the attempt ended: a stale grant is released."""
        pending, reply = answer
        self.late(pending.node, pending.round, reply)

    def late(self, node: int, round_: int, reply: object) -> None:
        a = self.acquire
        for action in self.core.on_late(node, round_, reply, self.released.is_set()):
            if isinstance(action, Release):
                a.calls.release_on(a.resource, self.owner(action.round), action.nodes)

    def finish(self) -> None:
        """Ends the attempt. Without a hold its round is withdrawn everywhere (its waits answer
        nil, its grants are freed), even when the caller is interrupted; held, the waits still
        queued stay, so the other nodes too grant the lock to its holder. Either way they are
        followed to their end and any grant they bring back stale is released."""
        if not self.settled:
            self.acquire.withdraw(self.owner(self.core.round))
        for what, node, round_, value in self.ready:
            if what == "reply":
                self.late(node, round_, value)
        self.waits.drain_later(self.release_late)
