"""Acting on a lock by owner name, and each node's view of it (client/src/admin.rs): what a
process needs when the lock was taken by another one (as the `dlock` CLI's release, extend and
status commands do)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import NodeFailure


@dataclass(frozen=True)
class LockInfo:
    """A lock as one node holds it."""

    owner: str
    token: int
    ttl_ms: int
    holds: int
    waiters: int


@dataclass(frozen=True)
class NodeStatus:
    """One node's view: `info` None and `failure` None means free there."""

    node: str
    info: LockInfo | None = None
    failure: str | None = None


def text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def number(fields: dict[str, object], name: str) -> int:
    value = fields.get(name, 0)
    return value if isinstance(value, int) else int(text(value))


def node_status(node: str, reply: object) -> NodeStatus:
    """DLOCK.STATUS's reply (`owner o token t ttl ms holds h [waiters w]`, or nil) as a NodeStatus."""
    if isinstance(reply, NodeFailure):
        return NodeStatus(node, failure=reply.reason)
    if reply is None:
        return NodeStatus(node)
    if not isinstance(reply, list) or len(reply) % 2:
        return NodeStatus(node, failure=f"unexpected DLOCK.STATUS reply {reply!r}")
    fields = {text(name): value for name, value in zip(reply[::2], reply[1::2], strict=True)}
    try:
        numbers = [number(fields, name) for name in ("token", "ttl", "holds", "waiters")]
    except ValueError as e:
        return NodeStatus(node, failure=f"unexpected DLOCK.STATUS reply {reply!r}: {e}")
    return NodeStatus(node, LockInfo(text(fields.get("owner", "")), *numbers))
