"""What the replies of one round come to (client/src/round.rs, its pure functions): votes,
quorum, the commit verdict and tallies. Shared by the sync and asyncio clients. `needed` is
always the acquisition's quorum (Kind.quorum: a majority for a lock, more for a semaphore)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import (
    DlockError,
    KindRefused,
    LockContended,
    LockLost,
    LockTimeout,
    NodeFailure,
    NoQuorum,
    ValidityExpired,
    WrongKindError,
)
from .commands import Args

CONTENDED = "contended"
NO_QUORUM = "no quorum"
EXPIRED = "validity expired"
REFUSED = "kind refused"  # never retried: asking again cannot change it


class KindRefusal(NodeFailure):
    """A node's error reply to ACQUIRE that refuses what it asks for (see kind_refusal)."""


def kind_refusal(request: Args, why: str) -> bool:
    """Whether an error reply (as _replies.reason words it: redis-py strips `ERR `) to `request`
    refuses its kind for good: WRONGKIND, an upgrade from a shared hold refused, or a module
    that does not know the kind option at all."""
    if not request or request[0] != "DLOCK.ACQUIRE":
        return False
    lowered = why.lower()
    return (
        why.startswith("WRONGKIND ")
        or "upgrading to exclusive is refused" in lowered
        or "unknown option 'shared'" in lowered
        or "unknown option 'limit'" in lowered
    )


def refusal(votes: Sequence[object]) -> KindRefusal | None:
    """The first kind refusal among the replies, if any: it ends the acquisition."""
    return next((v for v in votes if isinstance(v, KindRefusal)), None)


class AttemptFailed(Exception):
    """Why one attempt failed; the caller retries or turns it into a DlockError."""

    def __init__(self, kind: str, failures: list[NodeFailure] | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.failures = failures or []

    def to_error(self, resource: str, needed: int, attempts: int, waited: bool) -> DlockError:
        if self.kind == CONTENDED:
            return LockTimeout(resource, attempts) if waited else LockContended(resource, attempts)
        if self.kind == NO_QUORUM:
            return NoQuorum(resource, needed, self.failures)
        if self.kind == REFUSED:
            failure = self.failures[0]
            wrong = "WRONGKIND " in failure.reason
            return (WrongKindError if wrong else KindRefused)(resource, failure.node, failure.reason)
        return ValidityExpired(resource)


@dataclass(frozen=True)
class Granted:
    token: int


@dataclass(frozen=True)
class Refused:
    pass


Vote = Granted | Refused | NodeFailure


def unexpected(node: str, reply: object) -> NodeFailure:
    return NodeFailure(node, f"unexpected reply {reply!r}")


def vote(node: str, reply: object) -> Vote:
    """One node's answer to ACQUIRE: token, nil (held by another) or a failure."""
    if isinstance(reply, NodeFailure):
        return reply
    if reply is None:
        return Refused()
    if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
        return Granted(reply)
    return unexpected(node, reply)


@dataclass
class Count:
    """Granting nodes with their tokens, and the nodes that failed."""

    grants: list[tuple[int, int]] = field(default_factory=list)
    failures: list[NodeFailure] = field(default_factory=list)

    @staticmethod
    def of(votes: Sequence[Vote]) -> Count:
        count = Count()
        for node, v in enumerate(votes):
            if isinstance(v, Granted):
                count.grants.append((node, v.token))
            elif isinstance(v, NodeFailure):
                count.failures.append(v)
        return count


def nodes_worth_asking_again(votes: Sequence[Vote], needed: int) -> list[int]:
    """Nodes that failed (timeout, dropped connection) and may be asked again within the same
    attempt - ACQUIRE by the same owner is idempotent, so a grant whose reply was lost returns the
    same token - but only when that can still change the outcome."""
    granted = sum(isinstance(v, Granted) for v in votes)
    failed = [i for i, v in enumerate(votes) if isinstance(v, NodeFailure)]
    if granted >= needed or granted + len(failed) < needed:
        return []
    return failed


def majority_token(nodes: int, needed: int, count: Count) -> int:
    """Phase 1: the largest granted token if `needed` nodes granted; else no quorum (too few
    nodes answered at all) or contended (enough answered but others hold it)."""
    if len(count.grants) >= needed:
        return max(token for _, token in count.grants)
    if nodes - len(count.failures) < needed:
        raise AttemptFailed(NO_QUORUM, list(count.failures))
    raise AttemptFailed(CONTENDED)


def commit_verdict(needed: int, count: Count, refused: list[NodeFailure], valid: bool) -> None:
    """Phase 2: `needed` nodes must have committed. A refusal after validity ran out is expiry;
    otherwise every node that kept the commit from the quorum is named."""
    if len(count.grants) - len(refused) >= needed:
        return
    if not valid:
        raise AttemptFailed(EXPIRED)
    raise AttemptFailed(NO_QUORUM, list(count.failures) + refused)


def fence_failures(
    names: Sequence[str], grants: Sequence[tuple[int, int]], replies: Sequence[object]
) -> list[NodeFailure]:
    """The granting nodes that did not commit the FENCE, and why."""
    failures = []
    for (node, _), reply in zip(grants, replies, strict=False):
        if isinstance(reply, NodeFailure):
            failures.append(reply)
        elif reply != 1:
            failures.append(NodeFailure(names[node], "fence refused: lock no longer held"))
    return failures


@dataclass
class Tally:
    """What a request sent to every node (RELEASE, EXTEND) found."""

    done: int = 0
    refused: int = 0
    unreachable: list[NodeFailure] = field(default_factory=list)

    @staticmethod
    def of(replies: Sequence[object]) -> Tally:
        tally = Tally()
        for reply in replies:
            if isinstance(reply, NodeFailure):
                tally.unreachable.append(reply)
            elif reply == 1:
                tally.done += 1
            else:
                tally.refused += 1
        return tally

    def answered(self) -> int:
        return self.done + self.refused

    def no_quorum(self, resource: str, needed: int) -> NoQuorum:
        return NoQuorum(resource, needed, self.unreachable)

    def extend_error(self, resource: str, needed: int) -> DlockError:
        """NoQuorum when too few nodes answered to tell; otherwise the lock is not held (or not
        long enough) on a quorum: LockLost."""
        if self.answered() < needed:
            return self.no_quorum(resource, needed)
        return LockLost(resource)


@dataclass(frozen=True)
class Grant:
    """A successful acquisition: its token and until when (monotonic) it is safe to use."""

    token: int
    valid_until: float
