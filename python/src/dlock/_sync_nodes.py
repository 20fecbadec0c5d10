"""The sync transport: idle connections kept per node. Non-blocking requests fan out without
threads: every request is written first, then the replies are read against one deadline, so the
nodes work in parallel and a down or paused node costs at most the per-node timeout.

Server-side waits (ACQUIRE ... WAIT) block their connection, so each takes a connection of its
own from a second set. A wait that times out on our side closes its connection: the node sees
the disconnect and drops the waiter at once."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from redis.connection import AbstractConnection, Connection, ConnectionPool

from ._commands import Args
from .errors import NodeFailure


def connection_options() -> dict[str, Any]:
    """RESP2 whatever redis-py's default (8.x speaks RESP3: a HELLO round trip per connection,
    other reply shapes), and no CLIENT SETINFO handshake (two more round trips per connection);
    redis-py 7+ spells that driver_info=None, older ones lib_name=lib_version=None."""
    if "driver_info" in inspect.signature(AbstractConnection.__init__).parameters:
        return {"protocol": 2, "driver_info": None}
    return {"protocol": 2, "lib_name": None, "lib_version": None}


def make_pool(url: str, timeout: float | None) -> ConnectionPool:
    """Parses `url` (redis-py's rules) into what every connection to it is made with;
    connecting is bounded by `timeout`."""
    pool: ConnectionPool = ConnectionPool.from_url(  # type: ignore[no-untyped-call, unused-ignore]
        url, socket_connect_timeout=timeout, socket_timeout=timeout, **connection_options()
    )
    return pool


def error_codes() -> dict[type, str]:
    """The error classes redis-py turns some replies into, with the code it strips from the
    message (TRYAGAIN becomes TryAgainError in redis-py 8, READONLY ReadOnlyError, ...)."""
    try:
        from redis._parsers.base import BaseParser
    except ImportError:  # a redis-py that moved it: messages then go as redis-py gives them
        return {}
    return {kind: code for code, kind in BaseParser.EXCEPTION_CLASSES.items() if isinstance(kind, type)}


_CODES = error_codes()


def reason(error: BaseException) -> str:
    """A server error as the server wrote it (`TRYAGAIN ...`), anything else described."""
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


class NodeTimeout(NodeFailure):
    """No reply within the time allowed (the node may be slow, paused, or still queueing us)."""


class _Broken(NodeFailure):
    """The connection failed (reset, closed by the node): worth one more try on a fresh one."""


Sent = tuple[Connection, bool]  # the connection a request went out on, and whether it was reused
Packed = dict[Args, Any]  # requests encoded for the wire, by their arguments


class Idle:
    """The idle connections to one node. A taken connection goes back only after a complete
    reply; one in an unknown state (timed out, broken, interrupted) is closed instead. No check
    before reuse (that would be a syscall per request): a connection found dead is replaced and
    the request repeated once, as the Rust client does; every request is safe to repeat."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.lock = threading.Lock()
        self.idle: list[Connection] = []

    def take(self, fresh: bool = False) -> Sent:
        if not fresh:
            with self.lock:
                if self.idle:
                    return self.idle.pop(), True
        connection: Connection = self.pool.connection_class(**self.pool.connection_kwargs)
        connection.connect()  # type: ignore[no-untyped-call, unused-ignore]
        return connection, False

    def give_back(self, connection: Connection) -> None:
        with self.lock:
            self.idle.append(connection)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for connection in idle:
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]


class Node:
    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self.short = Idle(make_pool(url, timeout))
        self.waits = Idle(make_pool(url, timeout))

    def send(self, idle: Idle, args: Args, packed: Packed, fresh: bool = False) -> Sent | NodeFailure:
        """Writes `args` (encoded once per fan-out: `packed` keeps it for the other nodes)."""
        try:
            connection, reused = idle.take(fresh)
        except (redis.RedisError, OSError) as e:
            return NodeFailure(self.url, reason(e))
        try:
            if args not in packed:
                packed[args] = connection.pack_command(*args)  # type: ignore[no-untyped-call, unused-ignore]
            connection.send_packed_command(packed[args], check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
        except (redis.RedisError, OSError) as e:
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            return self.send(idle, args, packed, fresh=True) if reused else NodeFailure(self.url, reason(e))
        return connection, reused

    def receive(self, idle: Idle, connection: Connection, deadline: float, allowed: float) -> object:
        """The reply to what was sent on `connection`, if it comes by `deadline` (monotonic,
        `allowed` seconds after the request: for the message)."""
        timed_out = NodeTimeout(self.url, f"timed out after {allowed * 1000:.0f}ms")
        try:
            if not connection.can_read(timeout=max(0.0, deadline - time.monotonic())):  # type: ignore[no-untyped-call, unused-ignore]
                connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
                return timed_out
            reply: Any = connection.read_response()  # type: ignore[no-untyped-call, unused-ignore]
        except redis.ResponseError as e:
            idle.give_back(connection)  # an error reply leaves the connection in step
            return NodeFailure(self.url, reason(e))
        except redis.TimeoutError:
            return timed_out  # redis-py closed the connection
        except (redis.RedisError, OSError) as e:
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            return _Broken(self.url, reason(e))
        except BaseException:  # interrupted mid-reply: the connection's state is unknown
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise
        idle.give_back(connection)
        return reply

    def call(self, idle: Idle, args: Args, sent: Sent | NodeFailure, deadline: float, allowed: float) -> object:
        """The reply to `args` sent as `sent`; a reused connection found broken is replaced and
        the request made once more, by the same deadline."""
        if isinstance(sent, NodeFailure):
            return sent
        reply = self.receive(idle, sent[0], deadline, allowed)
        if isinstance(reply, _Broken) and sent[1]:
            return self.call(idle, args, self.send(idle, args, {}, fresh=True), deadline, allowed)
        return NodeFailure(reply.node, reply.reason) if isinstance(reply, _Broken) else reply

    def call_blocking(self, args: Args, timeout: float) -> object:
        """A blocking request on a connection of its own, bounded by `timeout` as a whole."""
        deadline = time.monotonic() + timeout
        return self.call(self.waits, args, self.send(self.waits, args, {}), deadline, timeout)

    def close(self) -> None:
        self.short.close()
        self.waits.close()


class Nodes:
    def __init__(self, urls: Sequence[str], timeout: float) -> None:
        self.timeout = timeout
        self.nodes = [Node(url, timeout) for url in urls]
        self.names = list(urls)

    def __len__(self) -> int:
        return len(self.nodes)

    def fan_out(self, calls: Sequence[tuple[int, Args]]) -> list[object]:
        """Sends each (node, command) and returns the replies in order; a failure is a
        NodeFailure. All within one per-node timeout from now."""
        deadline = time.monotonic() + self.timeout
        packed: Packed = {}
        sent = [self.nodes[node].send(self.nodes[node].short, args, packed) for node, args in calls]
        return [
            self.nodes[node].call(self.nodes[node].short, args, out, deadline, self.timeout)
            for (node, args), out in zip(calls, sent, strict=True)
        ]

    def everywhere(self, args: Args) -> list[object]:
        return self.fan_out([(n, args) for n in range(len(self.nodes))])

    def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        return self.nodes[node].call_blocking(args, timeout)

    def send_blocking(self, node: int, args: Args) -> Sent | NodeFailure:
        """The first half of call_blocking: the request goes out now, from this thread."""
        return self.nodes[node].send(self.nodes[node].waits, args, {})

    def receive_blocking(self, node: int, args: Args, sent: Sent | NodeFailure, timeout: float) -> object:
        """The second half: its reply within `timeout` from now."""
        target = self.nodes[node]
        return target.call(target.waits, args, sent, time.monotonic() + timeout, timeout)

    def close(self) -> None:
        for node in self.nodes:
            node.close()
