"""One redis-server as the sync transport reaches it: idle connections kept per server, one
set for short requests and one for server-side waits (ACQUIRE ... WAIT), which block their
connection. Commands are written in one write and their replies read against a deadline; a wait
that times out on our side closes its connection, so the node drops the waiter at once."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from redis.connection import Connection, ConnectionPool

from ..._pure.commands import Args
from ..._pure.refusals import node_failure
from ..._pure.replies import NodeTimeout, reason
from ...errors import NodeFailure


class _Broken(NodeFailure):
    """The connection failed (reset, closed by the node): worth one more try on a fresh one."""


Packed = dict[tuple[Args, ...], Any]  # what was written, encoded once per fan-out


class Idle:
    """The idle connections to one server. A taken connection goes back only after complete
    replies; one in an unknown state (timed out, broken, interrupted) is closed instead. No check
    before reuse (that would be a syscall per request): a connection found dead is replaced and
    the request repeated once, as the Rust client does; every request is safe to repeat."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.lock = threading.Lock()
        self.idle: list[Connection] = []

    def take(self, fresh: bool = False) -> tuple[Connection, bool]:
        """A connection, and whether it was open before (so possibly stale)."""
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


@dataclass
class Sent:
    """Commands written to one server and not read yet."""

    server: Server
    idle: Idle
    connection: Connection
    reused: bool
    commands: tuple[Args, ...]  # as written: [ASKING,] request [, WAIT]
    asking: bool = False
    redirects: int = 0


class Server:
    """One redis-server: a plain master, or one master of a cluster (`name` in errors)."""

    def __init__(self, name: str, pool: ConnectionPool) -> None:
        self.name = name
        self.short = Idle(pool)  # the pool only says how to connect: its own connections stay unused
        self.waits = Idle(pool)

    def send(self, idle: Idle, commands: tuple[Args, ...], packed: Packed, fresh: bool = False) -> Sent | NodeFailure:
        """Writes `commands` in one write (encoded once per fan-out: `packed` keeps them)."""
        try:
            connection, reused = idle.take(fresh)
        except (redis.RedisError, OSError) as e:
            return node_failure(self.name, e)
        try:
            if commands not in packed:
                packed[commands] = connection.pack_commands(commands)  # type: ignore[no-untyped-call, unused-ignore]
            connection.send_packed_command(packed[commands], check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
        except (redis.RedisError, OSError) as e:
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            return self.send(idle, commands, packed, fresh=True) if reused else node_failure(self.name, e)
        return Sent(self, idle, connection, reused, commands)

    def receive(self, sent: Sent, deadline: float, allowed: float) -> list[object] | NodeFailure:
        """One reply per command written (an error reply as its ResponseError), if they all come
        by `deadline` (monotonic, `allowed` seconds after the request: for the message)."""
        connection = sent.connection
        replies: list[object] = []
        try:
            for _ in sent.commands:
                if not connection.can_read(timeout=max(0.0, deadline - time.monotonic())):  # type: ignore[no-untyped-call, unused-ignore]
                    connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
                    return NodeTimeout(self.name, f"timed out after {allowed * 1000:.0f}ms")
                try:
                    replies.append(connection.read_response())  # type: ignore[no-untyped-call, unused-ignore]
                except redis.ResponseError as e:
                    replies.append(e)  # an error reply leaves the connection in step
        except redis.TimeoutError:
            return NodeTimeout(self.name, f"timed out after {allowed * 1000:.0f}ms")  # redis-py closed it
        except (redis.RedisError, OSError) as e:
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            return _Broken(self.name, reason(e))
        except BaseException:  # interrupted mid-reply: the connection's state is unknown
            connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise
        sent.idle.give_back(connection)
        return replies

    def read(self, sent: Sent, deadline: float, allowed: float) -> list[object] | NodeFailure | Sent:
        """The replies; a reused connection found broken is replaced and the commands written
        once more (the new Sent), to be read by the same deadline."""
        got = self.receive(sent, deadline, allowed)
        if isinstance(got, _Broken):
            if sent.reused:
                again = self.send(sent.idle, sent.commands, {}, fresh=True)
                if isinstance(again, Sent):
                    again.asking, again.redirects = sent.asking, sent.redirects
                return again
            return NodeFailure(got.node, got.reason)
        return got

    def has_idle(self, blocking: bool) -> bool:
        """Whether an idle connection is at hand, for a wait (`blocking`) or a short request."""
        return bool((self.waits if blocking else self.short).idle)

    def forget_idle(self) -> None:
        """Closes the idle connections: the next requests connect afresh (and a sentinel-managed
        master's connections ask the sentinels where the master is)."""
        self.short.close()
        self.waits.close()

    def close(self) -> None:
        self.forget_idle()
        sentinels = getattr(self.short.pool, "sentinel_manager", None)  # a sentinel node's own
        for sentinel in sentinels.sentinels if sentinels is not None else []:
            sentinel.close()
            sentinel.connection_pool.disconnect()  # not closed with a client made on it
