"""The DLOCK.* commands the client sends (README command table), as argument tuples."""

from __future__ import annotations

Args = tuple[object, ...]


def acquire(resource: str, owner: str, ttl_ms: int) -> Args:
    return ("DLOCK.ACQUIRE", resource, owner, ttl_ms)


def wait(resource: str, owner: str, ttl_ms: int, timeout_ms: int, ticket: int | None) -> Args:
    """Blocks on the node until granted or `timeout_ms`: a connection of its own."""
    args: Args = ("DLOCK.ACQUIRE", resource, owner, ttl_ms, "WAIT", timeout_ms)
    return (*args, "TICKET", ticket) if ticket is not None else args


def fence(resource: str, owner: str, token: int, ttl_ms: int | None = None) -> Args:
    args: Args = ("DLOCK.FENCE", resource, owner, token)
    return (*args, "PX", ttl_ms) if ttl_ms is not None else args


def extend(resource: str, owner: str, ttl_ms: int) -> Args:
    return ("DLOCK.EXTEND", resource, owner, ttl_ms)


def release(resource: str, owner: str) -> Args:
    return ("DLOCK.RELEASE", resource, owner)


def status(resource: str) -> Args:
    return ("DLOCK.STATUS", resource)
