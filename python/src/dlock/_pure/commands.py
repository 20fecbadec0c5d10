"""The DLOCK.* commands the client sends (README command table), as argument tuples
(client/src/commands.rs)."""

from __future__ import annotations

from .kind import Kind

Args = tuple[object, ...]


def kind_option(kind: Kind) -> Args:
    """What goes after every DLOCK.ACQUIRE's other arguments: nothing for an exclusive hold,
    `SHARED`, or `LIMIT k` for a semaphore's permit."""
    if kind.limit is not None:
        return ("LIMIT", kind.limit)
    return ("SHARED",) if kind.shared else ()


def acquire(resource: str, owner: str, ttl_ms: int, kind: Kind) -> Args:
    """The kind's option last, as on every ACQUIRE of an acquisition."""
    return ("DLOCK.ACQUIRE", resource, owner, ttl_ms, *kind_option(kind))


def wait(resource: str, owner: str, ttl_ms: int, timeout_ms: int, ticket: int | None, kind: Kind) -> Args:
    """Blocks on the node until granted or `timeout_ms`: a connection of its own."""
    args: Args = ("DLOCK.ACQUIRE", resource, owner, ttl_ms, "WAIT", timeout_ms)
    ticketed = (*args, "TICKET", ticket) if ticket is not None else args
    return (*ticketed, *kind_option(kind))


def fence(resource: str, owner: str, token: int, ttl_ms: int | None = None) -> Args:
    args: Args = ("DLOCK.FENCE", resource, owner, token)
    return (*args, "PX", ttl_ms) if ttl_ms is not None else args


def extend(resource: str, owner: str, ttl_ms: int) -> Args:
    return ("DLOCK.EXTEND", resource, owner, ttl_ms)


def release(resource: str, owner: str) -> Args:
    return ("DLOCK.RELEASE", resource, owner)


def status(resource: str) -> Args:
    return ("DLOCK.STATUS", resource)


def top(cursor: int, count: int) -> Args:
    """One step of a node's hot locks (names no key: masters only, never a cluster)."""
    return ("DLOCK.TOP", "CURSOR", cursor, "COUNT", count)


def proclaim(resource: str, owner: str, token: int, new_owner: str) -> Args:
    """The plain lock's holder `owner` (with `token`) takes `new_owner`, keeping token and lease."""
    return ("DLOCK.PROCLAIM", resource, owner, token, new_owner)


def observe(resource: str, after: tuple[int, str] | None, timeout_ms: int) -> Args:
    """The plain lock's holder: at once without `after`; with (token, owner) (`(0, "")`: seen
    free), once the node's holder differs from it, or its lease ends, or after `timeout_ms`
    (blocks: a connection of its own)."""
    since: Args = () if after is None else ("AFTER", after[0], "OWNER", after[1])
    return ("DLOCK.OBSERVE", resource, *since, "TIMEOUT", timeout_ms)
