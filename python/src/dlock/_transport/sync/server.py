"""One redis-server as the sync transport reaches it: how a connection to it is made, and the
connections kept. Commands are written in one write and their replies read against a deadline;
a wait that times out on our side closes its connection, so the node drops the waiter at once.

- How to connect is a redis-py connection pool (`server_pool`; a sentinel-managed master's in
  _transport/sync/sentinel.py, a cluster master's in _transport/sync/cluster.py) whose class and
  arguments Server uses to make its own connections.
- Plain TCP and TLS connections name what a connection closed before its first reply probably
  means (plain to a TLS port; TLS without the client certificate the server wants); TLS uses the
  manager's one context (_pure/connect.py).
- A ready-made client's connections have its class and arguments, with dlock's timeouts.
- Every connection, once set up, reads the server's run_id and claims it for its quorum node
  (_pure/identity.py) before any request: one server never counts twice.
- Idle connections are kept per server, one set for short requests and one for server-side
  waits (ACQUIRE ... WAIT), which block their connection."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.retry import Retry

from ..._pure import urls as ends
from ..._pure.commands import Args
from ..._pure.connect import Security
from ..._pure.diagnosis import PLAIN_TO_TLS, REFUSED_AFTER_HANDSHAKE, Explained, NamesEarlyClose
from ..._pure.identity import Identity, info_refused, run_id, run_id_refused, text, unknown_command
from ..._pure.refusals import final, node_failure
from ..._pure.replies import NodeTimeout, reason
from ...errors import NodeFailure


class PlainConnection(NamesEarlyClose, Connection):
    """redis-py's TCP connection; a connection closed before its first reply is Explained."""

    closed_early = PLAIN_TO_TLS

    def _connect(self) -> socket.socket:
        self.replied = False
        sock: socket.socket = super()._connect()  # type: ignore[no-untyped-call, unused-ignore]
        return sock

    def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().send_packed_command(*args, **kwargs)  # type: ignore[no-untyped-call, unused-ignore]
        except redis.ConnectionError as e:
            self.failed(e, reading=False)
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = super().read_response(*args, **kwargs)  # type: ignore[no-untyped-call, unused-ignore]
        except redis.RedisError as e:
            self.failed(e, reading=True)
            raise
        self.replied = True
        return reply


class TLSConnection(PlainConnection):
    """TLS with the manager's context, the server's name checked against `host`."""

    closed_early = REFUSED_AFTER_HANDSHAKE

    def __init__(self, *, tls_context: ssl.SSLContext, **kwargs: Any) -> None:
        self.tls_context = tls_context
        super().__init__(**kwargs)  # type: ignore[no-untyped-call, unused-ignore]

    def _connect(self) -> socket.socket:
        sock = super()._connect()
        try:  # the handshake is bounded by the socket's timeout: the per-node timeout
            return self.tls_context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def identified(identity: Identity) -> Callable[[Connection], None]:
    """redis-py's setup of a new connection (login, database, name), then the server's run_id
    claimed for `identity`'s node before any request (_pure/identity.py): DLOCK.RUNID, or INFO
    server where the module is older than that command."""

    def identify(connection: Connection) -> str | None:
        connection.on_connect()  # type: ignore[no-untyped-call, unused-ignore]
        try:
            found: str | None = text(ask(connection, "DLOCK.RUNID"))
        except redis.AuthenticationError:
            raise  # NOAUTH: no password given, said as any first request says it
        except redis.ResponseError as e:
            if not unknown_command(reason(e)):
                raise Explained(run_id_refused(reason(e))) from e
            try:  # a module older than DLOCK.RUNID: INFO server shows the same run_id
                found = run_id(ask(connection, "INFO", "server"))
            except redis.ResponseError as refused:
                raise Explained(info_refused(reason(refused))) from refused
        return found

    def set_up(connection: Connection) -> None:
        try:
            found = identify(connection)
        except redis.RedisError as e:
            refused = final(e, int(connection.db))
            if refused is None:
                raise
            raise refused from e  # connecting again cannot cure it: _pure/refusals.py
        identity.check(found)

    return set_up


def ask(connection: Connection, *args: str) -> object:
    """One request on a connection being set up, before the pool hands it out."""
    connection.send_command(*args, check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
    return connection.read_response()  # type: ignore[no-untyped-call, unused-ignore]


def base(timeout: float) -> dict[str, Any]:
    """Connecting, the TLS handshake and every read bounded by the per-node timeout; RESP2."""
    return {"socket_connect_timeout": timeout, "socket_timeout": timeout, **ends.connection_options()}


def tls(security: Security) -> dict[str, Any]:
    assert security.tls is not None  # built whenever a node uses TLS
    return {"tls_context": security.tls}


def server_pool(node: ends.Endpoint, timeout: float, security: Security, identity: Identity) -> ConnectionPool:
    """How to reach a single server or a ready-made client's server, each connection's server
    claimed for `identity`'s node."""
    checked = {"redis_connect_func": identified(identity)}
    if isinstance(node, ends.Single):
        kwargs = {**ends.single_kwargs(node, security), **base(timeout), **checked}
        if "path" in kwargs:
            return ConnectionPool(connection_class=UnixDomainSocketConnection, **kwargs)
        if node.tls:
            return ConnectionPool(connection_class=TLSConnection, **kwargs, **tls(security))
        return ConnectionPool(connection_class=PlainConnection, **kwargs)
    if isinstance(node, ends.ReadyClient):
        kwargs = {**ends.ready_kwargs(node.client), **base(timeout), "retry": Retry(NoBackoff(), 0), **checked}
        return ConnectionPool(connection_class=node.client.connection_pool.connection_class, **kwargs)
    raise TypeError(f"not a single server: {node!r}")


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
