"""How a server's replies become a node's answer, shared by the sync and asyncio transports:
error replies as the server wrote them, and the replica acknowledgement's verdict."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from ..errors import NodeFailure
from . import ack as _ack
from .commands import Args
from .diagnosis import diagnose
from .verdicts import ArgumentRefusal, KindRefusal, argument_refusal, kind_refusal


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
