"""The DLOCK.* commands the client sends (README command table), as argument tuples
(client/src/commands.rs)."""

from __future__ import annotations

from .kind import Kind
from .sets import KeySet

Args = tuple[object, ...]

#: What a lock is taken on: one resource, or a set of them all or nothing (sets.py), which
#: the same engine takes with the *ALL commands.
Resource = str | KeySet


def name_of(resource: Resource) -> str:
    """The name errors give: the resource, or a set's keys joined by commas."""
    return str(resource)


def key_of(request: Args) -> str:
    """The (first) key of a request, which a Cluster routes by: after numkeys for a set's command."""
    return str(request[2] if str(request[0]).endswith("ALL") else request[1])


def _set_keys(keys: KeySet) -> Args:
    return (len(keys.keys), *keys.keys)


def _modes(keys: KeySet) -> Args:
    """MODES only when some key is shared."""
    return ("MODES", keys.modes) if keys.modes is not None else ()


def acquire_all(keys: KeySet, owner: str, ttl_ms: int) -> Args:
    return ("DLOCK.ACQUIREALL", *_set_keys(keys), owner, ttl_ms, *_modes(keys))


def wait_all(keys: KeySet, owner: str, ttl_ms: int, timeout_ms: int, ticket: int | None) -> Args:
    """Queues on every key at once, holding nothing, until all are granted or `timeout_ms`."""
    args: Args = ("DLOCK.ACQUIREALL", *_set_keys(keys), owner, ttl_ms, *_modes(keys), "WAIT", timeout_ms)
    return (*args, "TICKET", ticket) if ticket is not None else args


def fence_all(keys: KeySet, owner: str, token: int, ttl_ms: int | None = None) -> Args:
    args: Args = ("DLOCK.FENCEALL", *_set_keys(keys), owner, token)
    return (*args, "PX", ttl_ms) if ttl_ms is not None else args


def extend_all(keys: KeySet, owner: str, ttl_ms: int) -> Args:
    return ("DLOCK.EXTENDALL", *_set_keys(keys), owner, ttl_ms)


def release_all(keys: KeySet, owner: str) -> Args:
    return ("DLOCK.RELEASEALL", *_set_keys(keys), owner)


def kind_option(kind: Kind) -> Args:
    """What goes after every DLOCK.ACQUIRE's other arguments: nothing for an exclusive hold,
    `SHARED`, or `LIMIT k` for a semaphore's permit."""
    if kind.limit is not None:
        return ("LIMIT", kind.limit)
    return ("SHARED",) if kind.shared else ()


def acquire(resource: Resource, owner: str, ttl_ms: int, kind: Kind) -> Args:
    """The kind's option last, as on every ACQUIRE of an acquisition (a set: its modes)."""
    if isinstance(resource, KeySet):
        return acquire_all(resource, owner, ttl_ms)
    return ("DLOCK.ACQUIRE", resource, owner, ttl_ms, *kind_option(kind))


def wait(resource: Resource, owner: str, ttl_ms: int, timeout_ms: int, ticket: int | None, kind: Kind) -> Args:
    """Blocks on the node until granted or `timeout_ms`: a connection of its own."""
    if isinstance(resource, KeySet):
        return wait_all(resource, owner, ttl_ms, timeout_ms, ticket)
    args: Args = ("DLOCK.ACQUIRE", resource, owner, ttl_ms, "WAIT", timeout_ms)
    ticketed = (*args, "TICKET", ticket) if ticket is not None else args
    return (*ticketed, *kind_option(kind))


def fence(resource: Resource, owner: str, token: int, ttl_ms: int | None = None) -> Args:
    if isinstance(resource, KeySet):
        return fence_all(resource, owner, token, ttl_ms)
    args: Args = ("DLOCK.FENCE", resource, owner, token)
    return (*args, "PX", ttl_ms) if ttl_ms is not None else args


def extend(resource: Resource, owner: str, ttl_ms: int) -> Args:
    if isinstance(resource, KeySet):
        return extend_all(resource, owner, ttl_ms)
    return ("DLOCK.EXTEND", resource, owner, ttl_ms)


def release(resource: Resource, owner: str) -> Args:
    if isinstance(resource, KeySet):
        return release_all(resource, owner)
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
