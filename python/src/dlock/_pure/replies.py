"""How a server's replies become a node's answer, shared by the sync and asyncio transports:
error replies as the server wrote them, and the replica acknowledgement's verdict."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from ..errors import NodeFailure
from . import ack as _ack
from .commands import Args
from .diagnosis import diagnose
from .verdicts import ArgumentRefusal, KindRefusal


def error_codes() -> dict[type, str]:
    """The error classes redis-py turns some replies into, with the code it strips from the
    message (TRYAGAIN becomes TryAgainError in redis-py 8, READONLY ReadOnlyError, ...)."""
    try:
        from redis._parsers.base import BaseParser
    except ImportError:  # a redis-py that moved it: messages then go as redis-py gives them
        return {}
    return {kind: code for code, kind in BaseParser.EXCEPTION_CLASSES.items() if isinstance(kind, type)}


_CODES = error_codes()


class NodeTimeout(NodeFailure):
    """No reply within the time allowed (the node may be slow, paused, or still queueing us)."""


def reason(error: BaseException) -> str:
    """A server error as the server wrote it (`TRYAGAIN ...`), a TLS or authentication failure
    said as such, anything else described."""
    diagnosis = diagnose(error)
    if diagnosis is not None:
        return diagnosis
    code = _CODES.get(type(error))
    if code is not None and not str(error).startswith(code):
        return f"{code} {error}"
    if isinstance(error, redis.ResponseError):
        return str(error)
    if isinstance(error, redis.TimeoutError):
        return f"timed out: {error}"
    if isinstance(error, redis.ConnectionError):
        return f"cannot connect: {error}"
    return f"{type(error).__name__}: {error}"


def argument_refusal(request: Args, why: str) -> bool:
    """Whether an error reply to `request` refuses an argument: `ERR <argument> must be <what it
    takes>`, as every argument check of the module words it (src/wire/errors.rs; redis-py drops
    the ERR). A node's `dlock.max-ttl-ms` set lower than the TTL asked, say: asking again cannot
    change it, so the attempt ends as the caller's invalid argument."""
    return bool(request) and request[0] in ("DLOCK.ACQUIRE", "DLOCK.ACQUIREALL") and " must be " in why


def kind_refusal(request: Args, why: str) -> bool:
    """Whether an error reply (as replies.reason words it: redis-py strips `ERR `) to `request`
    refuses its kind for good: WRONGKIND, an upgrade from a shared hold refused, or a module
    that does not know the kind option at all."""
    if not request or request[0] not in ("DLOCK.ACQUIRE", "DLOCK.ACQUIREALL"):
        return False
    lowered = why.lower()
    return (
        why.startswith("WRONGKIND ")
        or "upgrading to exclusive is refused" in lowered
        or "unknown option 'shared'" in lowered
        or "unknown option 'limit'" in lowered
    )


def refusal(request: Args, said: str) -> type[NodeFailure]:
    """What an error reply to `request` is: a refusal that asking again cannot change (the kind,
    an argument), or a node's failure."""
    if kind_refusal(request, said):
        return KindRefusal
    return ArgumentRefusal if argument_refusal(request, said) else NodeFailure


def answer(node: str, request: Args, replies: Sequence[object], ack: _ack.Ack | None, via: str = "") -> object:
    """The node's answer to `request` from the replies to what was written for it (the request,
    then its WAIT): the reply, or a NodeFailure for an error reply (`via` names the cluster's
    master that gave it; a KindRefusal when it refuses the kind asked for) or for a write short
    of acknowledgements."""
    first = replies[0] if replies else None
    if isinstance(first, redis.ResponseError):
        said = reason(first)
        failure = refusal(request, said)
        return failure(node, f"{via}{said}")
    why = _ack.shortfall(request, replies, ack)
    return first if why is None else NodeFailure(node, why)
