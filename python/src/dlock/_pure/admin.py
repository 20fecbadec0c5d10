"""Acting on a lock by owner name, and each node's view of it (client/src/admin.rs): what a
process needs when the lock was taken by another one (as the `dlock` CLI's release, extend and
status commands do)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NodeFailure


@dataclass(frozen=True)
class Holder:
    """One holder of a resource on one node; `mode` "exclusive", "shared" or "permit"."""

    owner: str
    token: int
    ttl_ms: int
    holds: int
    mode: str


@dataclass(frozen=True)
class LockInfo:
    """A resource as one node holds it. `kind`: "exclusive" (a plain lock, one holder),
    "shared" (a lock with shared holders, maybe an exclusive one too) or "semaphore" (`limit`
    set). `holders`: every holder; `owner`, `token`, `ttl_ms` and `holds` are the one with
    the largest token (the only one of a plain lock)."""

    owner: str
    token: int
    ttl_ms: int
    holds: int
    waiters: int
    kind: str = "exclusive"
    limit: int | None = None
    holders: tuple[Holder, ...] = ()


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
    if isinstance(value, list):  # a list of waiters rather than their count
        return len(value)
    return value if isinstance(value, int) else int(text(value))


def as_fields(reply: object) -> dict[str, object]:
    """A map reply (RESP2: a flat list of names and values; RESP3: a dict) by field name."""
    if isinstance(reply, dict):
        return {text(name): value for name, value in reply.items()}
    if not isinstance(reply, list) or len(reply) % 2:
        raise ValueError("not a map")
    return {text(name): value for name, value in zip(reply[::2], reply[1::2], strict=True)}


def holder(reply: object) -> Holder:
    fields = as_fields(reply)
    token, ttl_ms, holds = (number(fields, name) for name in ("token", "ttl", "holds"))
    return Holder(text(fields.get("owner", "")), token, ttl_ms, holds, text(fields.get("mode", "exclusive")))


def lock_info(fields: dict[str, object]) -> LockInfo:
    """DLOCK.STATUS's map: a plain lock (`owner o token t ttl ms holds h [waiters w]`), or a
    shared lock or semaphore (`kind k [limit l] holders [...] waiters w`)."""
    waiters = number(fields, "waiters")
    if "holders" not in fields:
        one = holder({**fields, "mode": "exclusive"})
        return LockInfo(one.owner, one.token, one.ttl_ms, one.holds, waiters, holders=(one,))
    listed = fields["holders"]
    holders = tuple(holder(h) for h in (listed if isinstance(listed, list) else []))
    top = max(holders, key=lambda h: h.token, default=Holder("", 0, 0, 0, ""))
    limit = number(fields, "limit") if "limit" in fields else None
    kind = text(fields.get("kind", "shared"))
    return LockInfo(top.owner, top.token, top.ttl_ms, top.holds, waiters, kind, limit, holders)


def node_status(node: str, reply: object) -> NodeStatus:
    """DLOCK.STATUS's reply (a map, or nil when free) as a NodeStatus."""
    if isinstance(reply, NodeFailure):
        return NodeStatus(node, failure=reply.reason)
    if reply is None:
        return NodeStatus(node)
    try:
        return NodeStatus(node, lock_info(as_fields(reply)))
    except ValueError as e:
        return NodeStatus(node, failure=f"unexpected DLOCK.STATUS reply {reply!r}: {e}")
