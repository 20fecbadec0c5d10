"""How the sync transport connects (the twin of _transport/aio/connect.py): the redis-py connection pool
that says how to reach each server, for _transport/sync/server.Server, which makes its own connections
with the pool's class and arguments.

- Plain TCP and TLS connections name what a connection closed before its first reply probably
  means (plain to a TLS port; TLS without the client certificate the server wants); TLS uses the
  manager's one context (_pure/security.py).
- A sentinel node's connections ask the sentinels for the master on connecting (redis-py's
  Sentinel, with dlock's messages) and check with ROLE that it is one; redis-py turns a READONLY
  reply into a connection error, so the request is repeated on a fresh connection, which asks
  the sentinels again.
- A ready-made client's connections have its class and arguments, with dlock's timeouts.
- Every connection, once set up, reads the server's run_id and claims it for its quorum node
  (_pure/identity.py) before any request: one server never counts twice."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection

from ..._pure import urls as ends
from ..._pure.cluster import Seed
from ..._pure.diagnosis import PLAIN_TO_TLS, REFUSED_AFTER_HANDSHAKE, Explained, NamesEarlyClose
from ..._pure.identity import Identity, info_refused, run_id, run_id_refused, text, unknown_command
from ..._pure.refusals import final
from ..._pure.replies import reason
from ..._pure.security import Security
from ..._pure.sentinel import master_address, not_a_master


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


class MasterConnection(SentinelManagedConnection):
    """Connects to the master the sentinels name, and only if it says it is one (ROLE)."""

    def connect_to(self, address: tuple[str, int]) -> None:
        super().connect_to(address)  # type: ignore[no-untyped-call, unused-ignore]
        self.send_command("ROLE", check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
        try:
            role = self.read_response()
        except redis.ResponseError as e:
            self.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise redis.ConnectionError(f"{address[0]}:{address[1]}: ROLE refused ({reason(e)})") from e
        refusal = not_a_master(address, role)
        if refusal is not None:
            self.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise redis.ConnectionError(refusal)


class SentinelPlain(MasterConnection, PlainConnection):
    pass


class SentinelTLS(MasterConnection, TLSConnection):
    pass


class Sentinels(Sentinel):
    """redis-py's Sentinel, asking each sentinel in turn with SENTINEL MASTER and saying why each
    could not name a master (redis-py's message lists client reprs)."""

    def discover_master(self, service_name: str) -> tuple[str, int]:
        failures = []
        for i, sentinel in enumerate(self.sentinels):
            kwargs = sentinel.connection_pool.connection_kwargs
            where = f"sentinel {kwargs['host']}:{kwargs['port']}"
            try:
                reply = sentinel.execute_command("SENTINEL", "MASTER", service_name)  # type: ignore[no-untyped-call, unused-ignore]
                found = master_address(service_name, reply)
            except (redis.RedisError, OSError) as e:
                found = reason(e)
            if isinstance(found, tuple):
                self.sentinels[0], self.sentinels[i] = sentinel, self.sentinels[0]  # ask it first next time
                return found
            failures.append(f"{where}: {found}")
        raise MasterNotFoundError(f"no sentinel names a master for {service_name!r} ({'; '.join(failures)})")


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


def pool(node: ends.Endpoint, timeout: float, security: Security, identity: Identity) -> ConnectionPool:
    """How to reach a single server, a sentinel-managed master or a ready-made client's server,
    each connection's server claimed for `identity`'s node."""
    checked = {"redis_connect_func": identified(identity)}
    if isinstance(node, ends.Single):
        kwargs = {**ends.single_kwargs(node, security), **base(timeout), **checked}
        if "path" in kwargs:
            return ConnectionPool(connection_class=UnixDomainSocketConnection, **kwargs)
        if node.tls:
            return ConnectionPool(connection_class=TLSConnection, **kwargs, **tls(security))
        return ConnectionPool(connection_class=PlainConnection, **kwargs)
    if isinstance(node, ends.SentinelGroup):
        return sentinel_pool(node, timeout, security, identity)
    if isinstance(node, ends.ReadyClient):
        kwargs = {**ends.ready_kwargs(node.client), **base(timeout), "retry": Retry(NoBackoff(), 0), **checked}
        return ConnectionPool(connection_class=node.client.connection_pool.connection_class, **kwargs)
    raise TypeError(f"not a single server: {node!r}")


def cluster_master_pool(
    seed: Seed, master: str, timeout: float, security: Security, identity: Identity
) -> ConnectionPool:
    checked = {"redis_connect_func": identified(identity)}
    kwargs = {**ends.cluster_master_kwargs(seed, master, security), **base(timeout), **checked}
    if seed.tls:
        return ConnectionPool(connection_class=TLSConnection, **kwargs, **tls(security))
    return ConnectionPool(connection_class=PlainConnection, **kwargs)


def sentinel_pool(group: ends.SentinelGroup, timeout: float, security: Security, identity: Identity) -> ConnectionPool:
    """The master's pool from redis-py's Sentinel; the sentinels are asked with the sentinels'
    login, TLS as the master (rediss+sentinel://), no retries (the next sentinel is asked)."""
    connection: type[Connection] = TLSConnection if group.tls else PlainConnection
    extra = tls(security) if group.tls else {}
    asking: dict[str, Any] = {**base(timeout), **security.sentinel_login.kwargs(), **extra}
    sentinels = Sentinels([])  # type: ignore[no-untyped-call, unused-ignore]
    sentinels.sentinels = [
        redis.Redis(connection_pool=ConnectionPool(connection_class=connection, host=host, port=port, **asking))
        for host, port in group.sentinels
    ]
    master: dict[str, Any] = {"connection_class": SentinelTLS if group.tls else SentinelPlain, **base(timeout)}
    master["redis_connect_func"] = identified(identity)  # each master found claims its server
    master.update(extra, **ends.sentinel_master_login(group, security))
    client = sentinels.master_for(group.service, **master)  # type: ignore[no-untyped-call, unused-ignore]
    master_pool: ConnectionPool = client.connection_pool
    return master_pool
