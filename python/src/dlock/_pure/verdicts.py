"""What replies come to, shared by the sync and asyncio clients: an ask's reply, the refusals
asking again cannot change (of the kind, of an argument, of a connection's setup), why an
attempt failed (AttemptFailed, and the error it becomes), a tally of a request sent to every
node. `needed` is always the acquisition's quorum (Kind.quorum: a majority for a lock, more for
a semaphore)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import (
    ArgumentRefused,
    DatabaseRefused,
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

CONTENDED = "contended"
NO_QUORUM = "no quorum"
EXPIRED = "validity expired"
REFUSED = "kind refused"  # never retried: asking again cannot change it
INVALID = "argument refused"  # never retried either


class KindRefusal(NodeFailure):
    """A node's error reply to ACQUIRE that refuses what it asks for (see replies.kind_refusal)."""


class ArgumentRefusal(KindRefusal):
    """A node's error reply to ACQUIRE that refuses one of its arguments (see replies.argument_refusal)."""


class SetupRefusal(NodeFailure):
    """A refusal met while a connection was set up that waiting cannot cure (credentials or
    permission refused: _pure/refusals.py): final for the call that met it, whose node is not
    connected to again within it."""


class DatabaseRefusal(SetupRefusal, ArgumentRefusal):
    """A database the server does not have (`SELECT` refused): the caller's invalid argument."""


class AttemptFailed(Exception):
    """Why one attempt failed; the caller retries or turns it into a DlockError."""

    def __init__(self, kind: str, failures: list[NodeFailure] | None = None, final: bool = False) -> None:
        super().__init__(kind)
        self.kind = kind
        self.failures = failures or []
        self.final = final  # nodes refused for the call leave a quorum out of reach: no more attempts

    def to_error(self, resource: str, needed: int, attempts: int, waited: bool) -> DlockError:
        if self.kind == CONTENDED:
            return LockTimeout(resource, attempts) if waited else LockContended(resource, attempts)
        if self.kind == NO_QUORUM:
            return NoQuorum(resource, needed, self.failures)
        if self.kind == INVALID:
            failure = self.failures[0]
            refused = DatabaseRefused if isinstance(failure, DatabaseRefusal) else ArgumentRefused
            return refused(resource, failure.node, failure.reason)
        if self.kind == REFUSED:
            failure = self.failures[0]
            wrong = "WRONGKIND " in failure.reason
            return (WrongKindError if wrong else KindRefused)(resource, failure.node, failure.reason)
        return ValidityExpired(resource)


def unexpected(node: str, reply: object) -> NodeFailure:
    return NodeFailure(node, f"unexpected reply {reply!r}")


def ask_reply(node: str, reply: object) -> object:
    """A node's reply to an ask (ACQUIRE, with or without WAIT), as attempt.py reads it: a
    token, None (nil: held by another, or the wait ended), or a NodeFailure (anything else)."""
    if isinstance(reply, NodeFailure) or reply is None:
        return reply
    if isinstance(reply, int) and not isinstance(reply, bool) and reply > 0:
        return reply
    return unexpected(node, reply)


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
    """A successful acquisition: its token (the largest grant), until when (monotonic) it is safe
    to use, the nodes that granted it, and whether it owes its commit (_pure/commit.py: paid when
    the token is first read)."""

    token: int
    valid_until: float
    holding: tuple[int, ...] = ()
    owed: bool = False
