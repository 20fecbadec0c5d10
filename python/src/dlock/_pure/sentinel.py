"""A sentinel-managed master as one quorum node, the parts free of I/O (the sync and asyncio
connections in _transport/sync/sentinel.py and _transport/aio/sentinel.py do the talking): what a
sentinel's SENTINEL MASTER reply says, and whether a server's ROLE reply is a master's.

Each new connection asks the sentinels in turn (redis-py's Sentinel; the one that answered is
asked first next time) and then the server itself: a sentinel can name a master that a failover
has just demoted, or one it alone still believes in."""

from __future__ import annotations

from .identity import text

#: A sentinel's flags that say the master it monitors is down (as redis-py reads them; a link
#: being set up again, "disconnected", is no such sign).
DOWN_FLAGS = {"s_down", "o_down"}


def fields(reply: object) -> dict[str, str]:
    """A flat RESP2 `name value ...` list (or a dict, as redis-py may already have made it)."""
    if isinstance(reply, dict):
        return {text(k): text(v) for k, v in reply.items()}
    if isinstance(reply, list) and len(reply) % 2 == 0:
        return {text(k): text(v) for k, v in zip(reply[::2], reply[1::2], strict=True)}
    return {}


def master_address(service: str, reply: object) -> tuple[str, int] | str:
    """The master's (host, port) from SENTINEL MASTER's reply, or why this sentinel gives none."""
    state = fields(reply)
    try:
        host, port = state["ip"], int(state["port"])
    except (KeyError, ValueError):
        return f"unexpected SENTINEL MASTER reply for {service!r}"
    flags = set(state.get("flags", "").split(","))
    if "master" not in flags or flags & DOWN_FLAGS:
        return f"sees {host}:{port} as {state.get('flags', '?')}"
    return host, port


def not_a_master(address: tuple[str, int], role: object) -> str | None:
    """Why the server at `address` is not to be used as the master (its ROLE reply says it is
    something else), or None."""
    kind = text(role[0]) if isinstance(role, list) and role else repr(role)
    if kind == "master":
        return None
    return f"{address[0]}:{address[1]}, named master by the sentinels, is a {kind} (a failover under way?)"
