"""The sync transport: one connection pool per node. Non-blocking requests fan out without
threads: every request is written first, then the replies are read against one deadline, so the
nodes work in parallel and a down or paused node costs at most the per-node timeout.

Server-side waits (ACQUIRE ... WAIT) block their connection, so each takes a connection of its
own from a second pool. A wait that times out on our side closes its connection: the node sees
the disconnect and drops the waiter at once."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.connection import AbstractConnection, Connection, ConnectionPool

from ._commands import Args
from .errors import NodeFailure

#: redis-py 6 deprecated get_connection's command-name argument that redis-py 5 requires.
_NAMED_GET = int(redis.__version__.split(".")[0]) < 6


def connection_options() -> dict[str, Any]:
    """RESP2 whatever redis-py's default (8.x speaks RESP3: a HELLO round trip per connection,
    other reply shapes), and no CLIENT SETINFO handshake (two more round trips per connection);
    redis-py 7+ spells that driver_info=None, older ones lib_name=lib_version=None."""
    if "driver_info" in inspect.signature(AbstractConnection.__init__).parameters:
        return {"protocol": 2, "driver_info": None}
    return {"protocol": 2, "lib_name": None, "lib_version": None}


def make_pool(url: str, timeout: float | None) -> ConnectionPool:
    """A pool for `url`; connecting is bounded by `timeout`."""
    pool: ConnectionPool = ConnectionPool.from_url(  # type: ignore[no-untyped-call, unused-ignore]
        url, socket_connect_timeout=timeout, socket_timeout=timeout, **connection_options()
    )
    return pool


def reason(error: BaseException) -> str:
    """A server error as the server wrote it (`TRYAGAIN ...`), anything else described."""
    if isinstance(error, redis.ResponseError):
        return str(error)
    if isinstance(error, redis.TimeoutError):
        return f"timed out: {error}"
    if isinstance(error, redis.ConnectionError):
        return f"cannot connect: {error}"
    return f"{type(error).__name__}: {error}"


class NodeTimeout(NodeFailure):
    """No reply within the time allowed (the node may be slow, paused, or still queueing us)."""


class Node:
    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self.pool = make_pool(url, timeout)
        self.wait_pool = make_pool(url, timeout)

    def take(self, pool: ConnectionPool) -> Connection:
        get: Callable[..., Connection] = pool.get_connection
        return get("DLOCK") if _NAMED_GET else get()

    def send(self, args: Args) -> Connection | NodeFailure:
        try:
            connection = self.take(self.pool)
        except (redis.RedisError, OSError) as e:
            return NodeFailure(self.url, reason(e))
        try:
            connection.send_command(*args)  # type: ignore[no-untyped-call, unused-ignore]
        except (redis.RedisError, OSError) as e:
            self.drop(self.pool, connection)
            return NodeFailure(self.url, reason(e))
        return connection

    def receive(self, pool: ConnectionPool, connection: Connection, deadline: float, allowed: float) -> object:
        """The reply to what was sent on `connection`, if it comes by `deadline` (monotonic,
        `allowed` seconds after the request: for the message)."""
        try:
            left = max(0.0, deadline - time.monotonic())
            if not connection.can_read(timeout=left):  # type: ignore[no-untyped-call, unused-ignore]
                self.drop(pool, connection)
                return NodeTimeout(self.url, f"timed out after {allowed * 1000:.0f}ms")
            reply: Any = connection.read_response()  # type: ignore[no-untyped-call, unused-ignore]
        except redis.ResponseError as e:
            pool.release(connection)
            return NodeFailure(self.url, reason(e))
        except (redis.RedisError, OSError) as e:
            self.drop(pool, connection)
            return NodeFailure(self.url, reason(e))
        except BaseException:  # interrupted mid-reply: the connection's state is unknown
            self.drop(pool, connection)
            raise
        pool.release(connection)
        return reply

    def drop(self, pool: ConnectionPool, connection: Connection) -> None:
        """Closes a connection in an unknown state (a reply may still come) and returns it."""
        connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
        pool.release(connection)

    def call_blocking(self, args: Args, timeout: float) -> object:
        """A blocking request on a connection of its own, bounded by `timeout` as a whole."""
        deadline = time.monotonic() + timeout
        try:
            connection = self.take(self.wait_pool)
            connection.send_command(*args)  # type: ignore[no-untyped-call, unused-ignore]
        except (redis.RedisError, OSError) as e:
            return NodeFailure(self.url, reason(e))
        return self.receive(self.wait_pool, connection, deadline, timeout)

    def close(self) -> None:
        self.pool.disconnect()
        self.wait_pool.disconnect()


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
        sent = [self.nodes[node].send(args) for node, args in calls]
        replies: list[object] = []
        for (node, _), connection in zip(calls, sent, strict=False):
            if isinstance(connection, NodeFailure):
                replies.append(connection)
            else:
                target = self.nodes[node]
                replies.append(target.receive(target.pool, connection, deadline, self.timeout))
        return replies

    def everywhere(self, args: Args) -> list[object]:
        return self.fan_out([(n, args) for n in range(len(self.nodes))])

    def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        return self.nodes[node].call_blocking(args, timeout)

    def close(self) -> None:
        for node in self.nodes:
            node.close()
