"""What can go wrong, as exception classes a caller can act on (the Rust crate's `Error`). The
messages are the words every dlock client uses (conformance/errors.json): which lock or node,
what failed, and what to do."""

from __future__ import annotations

import json
from dataclasses import dataclass


def quoted(name: str) -> str:
    """A resource's name in double quotes, as the Rust and Node clients print it."""
    return json.dumps(name, ensure_ascii=False)


def count(n: int, noun: str) -> str:
    """`n` and its noun, singular or plural: `1 attempt`, `3 attempts`."""
    return f"1 {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class NodeFailure:
    """Why one node did not count towards a quorum: its URL and what went wrong."""

    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node}: {self.reason}"


class DlockError(Exception):
    """Base class of every error the client raises about a lock (not about bad arguments)."""

    def __init__(self, resource: str, message: str) -> None:
        super().__init__(message)
        self.resource = resource


class LockContended(DlockError):
    """Held by another owner on a majority: `try_lock` got no majority, or `lock` ran out of
    `wait` (then the subclass `LockTimeout`). `attempts`: attempts made."""

    def __init__(self, resource: str, attempts: int = 1) -> None:
        super().__init__(resource, f"lock {quoted(resource)} is held by another owner ({count(attempts, 'attempt')})")
        self.attempts = attempts


class LockTimeout(LockContended, TimeoutError):
    """`lock` waited the whole `wait` and the lock stayed held by others."""


class NoQuorum(DlockError):
    """Too few nodes answered usefully; `failures` names each node that failed and why."""

    def __init__(self, resource: str, needed: int, failures: list[NodeFailure]) -> None:
        message = f"no quorum for {quoted(resource)}: {count(needed, 'node')} needed, {len(failures)} failed"
        if failures:
            message += ": " + "; ".join(str(f) for f in failures)
        super().__init__(resource, message)
        self.needed = needed
        self.failures = failures


class ValidityExpired(DlockError):
    """A majority granted, but the time spent left no validity (slow nodes, tiny TTL)."""

    def __init__(self, resource: str) -> None:
        super().__init__(
            resource,
            f"lock {quoted(resource)} was granted, but its validity ran out while acquiring: give a longer TTL",
        )


class LockLost(DlockError):
    """The lock is no longer held on a majority (extension refused, validity ran out, or the
    watchdog stopped at `max_hold`)."""

    def __init__(self, resource: str) -> None:
        super().__init__(
            resource, f"lock {quoted(resource)} was lost (no longer held on a majority): stop using its token"
        )


class StaleToken(LockLost):
    """A guarded write (`Lock.guarded`) was refused: a newer holder already wrote through `gate`
    with a larger token than `token`. Nothing changed, and the lock is marked lost."""

    def __init__(self, resource: str, gate: str, token: int) -> None:
        DlockError.__init__(
            self,
            resource,
            f"lock {resource!r} was lost: gate {gate!r} has seen a newer token than {token}; nothing was written",
        )
        self.gate = gate
        self.token = token


class KindRefused(DlockError):
    """A node refused what the acquisition asks for, which asking again cannot change: never
    retried. `node` names it, `reply` is the server's message. Besides WrongKindError: a shared
    holder asking for the exclusive side (upgrade refused), or a module that predates shared
    locks and semaphores (`unknown option 'SHARED'`)."""

    def __init__(self, resource: str, node: str, reply: str) -> None:
        super().__init__(resource, self.describe(resource, node, reply))
        self.node = node
        self.reply = reply

    @staticmethod
    def describe(resource: str, node: str, reply: str) -> str:
        return f"lock {quoted(resource)} cannot be taken as asked on {node}: {reply}"


class WrongKindError(KindRefused):
    """`WRONGKIND ...`: the resource is held as another kind (a lock asked as a semaphore, or a
    semaphore asked with another limit, or the reverse). A resource keeps its kind while held."""

    @staticmethod
    def describe(resource: str, node: str, reply: str) -> str:
        return f"lock {quoted(resource)} is held as another kind on {node}: {reply}"


class ArgumentRefused(KindRefused, ValueError):
    """A node refused an argument of the request (`ERR ... must be ...`: a TTL over its
    dlock.max-ttl-ms, say), which asking again cannot change: the call ends at once, a
    ValueError as the arguments refused before any node is asked are."""

    @staticmethod
    def describe(resource: str, node: str, reply: str) -> str:
        return f"lock {quoted(resource)}: {node} refused an argument: {reply}"


class DatabaseRefused(ArgumentRefused):
    """A node refused the URL's database (`SELECT`: the server has fewer): a bad argument, which
    no wait can cure."""

    @staticmethod
    def describe(resource: str, node: str, reply: str) -> str:
        return f"lock {quoted(resource)}: {node}: {reply}"


class UnitWarning(UserWarning):
    """A duration that is valid but probably in the wrong unit: a TTL of more than an hour given
    in seconds (ttl=10000 is 2.8 hours; milliseconds typed by habit?). The lock is taken as
    asked; pass a timedelta to say a long lease is meant."""
