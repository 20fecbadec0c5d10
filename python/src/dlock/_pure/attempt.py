"""One attempt to take a lock, free of I/O (client/src/attempt.rs, ported): the acquisition
machine (acquisition.py) and every decision the driver takes around it. Replies go in, actions
come out; the drivers (_async/driver.py and its sync twin) do the sending, the timers and the
background work. conformance/attempts.json (with replies.json, leases.json, retries.json) pins
each decision for the three clients.

- How a reply counts (`classify`): a grant (its token); BUSY, the lock held by others (nil, or a
  queued wait that ran past the deadline unanswered: a server notices a wait's timeout only at
  its next tick, so the client's own time for the call may run out first); a node failure; or
  the kind or an argument refused (a KindRefusal, an ArgumentRefusal: the attempt ends, asking
  again cannot change it).
- A node whose connection setup met a refusal waiting cannot cure (a SetupRefusal: credentials
  or permission refused, _pure/refusals.py) is not asked again; once such nodes leave a quorum
  out of reach the attempt ends, and no other follows (AttemptFailed.final).
- Asking again: a failed node is asked again; a queued wait after the retry pause while its
  round lasts (the machine counts the node out meanwhile), a plain ACQUIRE at once, once per
  round, while a quorum has not granted yet (its failure counts only if the repeat fails too).
- Once held, requests still out stay out: a grant they bring is the holder's and goes with the
  holder's RELEASE; a grant of an earlier round, of an attempt that did not hold, or that comes
  after the holder released is released at once (`Attempt.on_late`).
- Why it failed (AttemptFailed): too many failed nodes for a quorum is no quorum; a one-round
  commit that missed is no quorum, or expired once validity ran out; otherwise contended.
- The lease (`lease`) and another attempt (`another_attempt`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NodeFailure
from . import acquisition as machine
from .replies import NodeTimeout
from .verdicts import (
    CONTENDED,
    EXPIRED,
    INVALID,
    NO_QUORUM,
    REFUSED,
    ArgumentRefusal,
    AttemptFailed,
    KindRefusal,
    SetupRefusal,
)


@dataclass(frozen=True)
class Policy:
    """How an attempt asks the nodes: queued on them (`queue`: ACQUIRE ... WAIT, round after
    round until the deadline, the commit starting the lease afresh), or one plain ACQUIRE per node
    in one round (try_lock, retry mode). With `commit` off such a round holds once a quorum
    granted and every node answered: the managers run their no-wait attempts so, the hold owing
    its commit until its token is read when fencing is on (commit.py); `commit` on is the
    one-round commit of conformance/attempts.json's policy "no_wait"."""

    queue: bool
    commit: bool = True


QUEUE = Policy(queue=True)


class Busy:
    """Held by others until the ask ended."""

    def __repr__(self) -> str:
        return "BUSY"


BUSY = Busy()
#: How a reply counts: a token, BUSY, or a NodeFailure (a KindRefusal: the kind refused).
Outcome = int | Busy | NodeFailure


@dataclass(frozen=True)
class Ask:
    """Ask `nodes` as the owner of `round`: a new round, whose lease counts from here (until a
    queued commit restarts it)."""

    round: int
    nodes: list[int]


@dataclass(frozen=True)
class AskAgain:
    """Ask `node` again as the owner of `round`: at once, or after the retry pause (then
    `on_pause_over` says whether it still goes)."""

    node: int
    round: int
    after_pause: bool


@dataclass(frozen=True)
class Fence:
    round: int
    token: int
    nodes: list[int]


@dataclass(frozen=True)
class Release:
    round: int
    nodes: list[int]


@dataclass(frozen=True)
class Held:
    round: int
    token: int


@dataclass(frozen=True)
class Failed:
    error: AttemptFailed


Action = Ask | AskAgain | Fence | Release | Held | Failed


def classify(reply: object, policy: Policy, past_deadline: bool) -> Outcome:
    """How a reply to an ask counts (a token, None for nil, or a NodeFailure), given the policy
    and whether the lock() call's deadline had passed when it came."""
    if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
        return reply
    if reply is None:
        return BUSY
    if isinstance(reply, NodeTimeout) and policy.queue and past_deadline:
        return BUSY
    assert isinstance(reply, NodeFailure), f"a reply is a token, nil or a failure, not {reply!r}"
    return reply


def lease(nodes: int, left: float | None, ttl_ms: int, renewed: bool) -> str:
    """What a held lock comes to, given the validity `left` (seconds) counted from the request
    that last set its TTL: "held"; "renew" (one node, whose grant may have come long after the
    wait was sent: renew the TTL once and count from the renewal); or "expired"."""
    if nodes == 1 and not renewed and (left is None or left * 2000 < ttl_ms):
        return "renew"
    return "held" if left is not None else "expired"


def another_attempt(
    policy: Policy, error: AttemptFailed, out_of_time: bool, attempts: int, retries: int | None
) -> bool:
    """Whether a failed attempt is followed by another (after the retry pause): not when the kind
    or an argument was refused, nor when nodes refused for the call left a quorum out of reach, nor
    when a queued attempt was contended (it waited to the deadline), nor out of
    time (the pause would end past the deadline) or of retries (`retries` None: unlimited)."""
    if error.final or error.kind in (REFUSED, INVALID) or (error.kind == CONTENDED and policy.queue):
        return False
    return not out_of_time and (retries is None or attempts <= retries)


class Attempt:
    """One attempt: the machine, and what the driver needs to know of this round."""

    def __init__(self, nodes: int, needed: int, policy: Policy) -> None:
        self.policy = policy
        if policy.queue:
            self.machine, self.first = machine.Acquisition.start(nodes, needed)
        else:
            self.machine, self.first = machine.Acquisition.start_once(nodes, needed, policy.commit)
        self.nodes = nodes
        self.needed = self.machine.needed
        self.outcomes: list[Outcome | None] = [None] * nodes  # this round, each node's last answer
        self.asked_again = [False] * nodes  # this round, asked again at once
        self.uncommitted: list[NodeFailure] = []  # this round's commit: who did not, and why
        self.held_round: int | None = None
        self.final: set[int] = set()  # nodes whose connection setup met a refusal (SetupRefusal)

    @staticmethod
    def start(nodes: int, needed: int, policy: Policy) -> tuple[Attempt, list[Action]]:
        """Round 0 of an attempt held once `needed` of `nodes` nodes committed."""
        attempt = Attempt(nodes, needed, policy)
        return attempt, attempt._act(attempt.first, True)

    @property
    def round(self) -> int:
        return self.machine.round

    def holding(self) -> list[int]:
        """The nodes that granted this round (once held: the hold's nodes, a commit owed goes to)."""
        return self.machine.granted_nodes()

    def is_over(self) -> bool:
        return self.machine.is_over()

    def on_reply(self, node: int, round_: int, reply: object, past_deadline: bool) -> list[Action]:
        """`node`'s reply to its ask of `round_`."""
        if self.is_over():
            return self.on_late(node, round_, reply, False)
        outcome = classify(reply, self.policy, past_deadline)
        event: machine.Event
        if isinstance(outcome, int):
            event = machine.Granted(node, round_, outcome)
        else:
            event = machine.Unavailable(node, round_)
        if round_ != self.round or node >= self.nodes:
            return self._act(self.machine.on(event), True)  # a stale grant is released
        if isinstance(outcome, KindRefusal):
            refused = INVALID if isinstance(outcome, ArgumentRefusal) else REFUSED
            return self._give_up(AttemptFailed(refused, [outcome]))
        self.outcomes[node] = outcome
        if isinstance(outcome, SetupRefusal):
            return self._refused_for_good(node, event)
        failed = isinstance(outcome, NodeFailure)
        if failed and self._ask_at_once(node):
            return [AskAgain(node, round_, False)]  # the repeat's reply counts instead
        actions = self._act(self.machine.on(event), True)
        if failed and self.policy.queue and not self.is_over():
            actions.append(AskAgain(node, round_, True))
        return actions

    def _refused_for_good(self, node: int, event: machine.Event) -> list[Action]:
        """A node whose connection setup met a refusal waiting cannot cure: never asked again;
        once such nodes leave a quorum out of reach, the call ends at once."""
        self.final.add(node)
        if self.nodes - len(self.final) < self.needed:
            failures = [o for o in self.outcomes if isinstance(o, NodeFailure)]
            return self._give_up(AttemptFailed(NO_QUORUM, failures, final=True))
        return self._act(self.machine.on(event), True)

    def _ask_at_once(self, node: int) -> bool:
        """A plain ACQUIRE that failed is repeated at once, once per round, unless a quorum
        granted without it (see the module's notes)."""
        if self.policy.queue or self.asked_again[node] or len(self.machine.granted_nodes()) >= self.needed:
            return False
        self.asked_again[node] = True
        return True

    def on_pause_over(self, node: int, round_: int) -> list[Action]:
        """The retry pause of an AskAgain is over: the ask goes if its round still lasts."""
        if self.is_over() or round_ != self.round:
            return []
        return [AskAgain(node, round_, False)]

    def on_fenced(self, node: int, round_: int, failure: NodeFailure | None, valid: bool) -> list[Action]:
        """`node`'s reply to the commit of `round_`: committed (`failure` None) or why not;
        `valid`: whether validity is left now."""
        if failure is not None and round_ == self.round and not self.is_over():
            self.uncommitted.append(failure)
        return self._act(self.machine.on(machine.Fenced(node, round_, failure is None)), valid)

    def on_deadline(self) -> list[Action]:
        """The attempt's time ran out (queued attempts only): its round is withdrawn."""
        if self.is_over():
            return []
        return self._give_up(self._verdict(True))

    def on_late(self, node: int, round_: int, reply: object, released: bool) -> list[Action]:
        """A reply that comes after the attempt ended, or after the holder released
        (`released`): a grant is released at once unless it is the current holder's."""
        if not (isinstance(reply, int) and not isinstance(reply, bool) and reply > 0):
            return []
        if self.held_round == round_ and not released:
            return []  # the holder's: its RELEASE frees it
        return [Release(round_, [node])]

    def _give_up(self, error: AttemptFailed) -> list[Action]:
        """Ends the attempt now: its round withdrawn everywhere."""
        releases: list[Action] = [
            Release(s.round, s.nodes) for s in self.machine.abandon() if isinstance(s, machine.Release)
        ]
        return [*releases, Failed(error)]

    def _act(self, steps: list[machine.Step], valid: bool) -> list[Action]:
        """The machine's steps as actions."""
        actions: list[Action] = []
        for step in steps:
            if isinstance(step, machine.Wait):
                self.outcomes = [None] * self.nodes
                self.asked_again = [False] * self.nodes
                self.uncommitted = []
                actions.append(Ask(step.round, step.nodes))
            elif isinstance(step, machine.Fence):
                actions.append(Fence(step.round, step.token, step.nodes))
            elif isinstance(step, machine.Release):
                actions.append(Release(step.round, step.nodes))
            elif isinstance(step, machine.Held):
                self.held_round = self.round
                actions.append(Held(self.round, step.token))
            else:
                actions.append(Failed(self._verdict(valid)))
        return actions

    def _verdict(self, valid: bool) -> AttemptFailed:
        """Why this round came to nothing (see the module's notes)."""
        failures = [o for o in self.outcomes if isinstance(o, NodeFailure)]
        if self.uncommitted:
            return AttemptFailed(NO_QUORUM, failures + self.uncommitted) if valid else AttemptFailed(EXPIRED)
        if self.nodes - len(failures) < self.needed:
            return AttemptFailed(NO_QUORUM, failures)
        return AttemptFailed(CONTENDED)
