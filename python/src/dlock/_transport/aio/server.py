"""One redis-server as the asyncio transport reaches it (the twin of _transport/sync/server.py,
which says why each part is there): how its clients are made, with dlock's connection classes (a
connection closed before its first reply Explained; TLS with the manager's one context) or with a
ready-made client's class and arguments, every connection's server claimed for its quorum node
before any request (_pure/identity.py); a sentinel-managed master's in
_transport/aio/sentinel.py, a cluster master's in _transport/aio/cluster.py. A server has a
redis.asyncio client for short requests and one for server-side waits, which block their
connection (each wait gets a connection of its own from that client's pool)."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from ..._pure import urls as ends
from ..._pure.commands import Args
from ..._pure.connect import Security
from ..._pure.diagnosis import PLAIN_TO_TLS, REFUSED_AFTER_HANDSHAKE, Explained, NamesEarlyClose
from ..._pure.identity import Identity, info_refused, run_id, run_id_refused, text, unknown_command
from ..._pure.refusals import final
from ..._pure.replies import reason

#: Makes one redis.asyncio client of a server (a server has two: short requests and waits).
ClientMaker = Callable[[], aioredis.Redis]


class PlainConnection(NamesEarlyClose, Connection):
    closed_early = PLAIN_TO_TLS

    async def _connect(self) -> None:
        self.replied = False
        await super()._connect()  # type: ignore[no-untyped-call, unused-ignore]

    async def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super().send_packed_command(*args, **kwargs)  # type: ignore[no-untyped-call, unused-ignore]
        except redis.ConnectionError as e:
            self.failed(e, reading=False)
            raise

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = await super().read_response(*args, **kwargs)  # type: ignore[no-untyped-call, unused-ignore]
        except redis.RedisError as e:
            self.failed(e, reading=True)
            raise
        self.replied = True
        return reply


class TLSConnection(PlainConnection):
    closed_early = REFUSED_AFTER_HANDSHAKE

    def __init__(self, *, tls_context: ssl.SSLContext, **kwargs: Any) -> None:
        self.tls_context = tls_context
        super().__init__(**kwargs)

    def _connection_arguments(self) -> Mapping[str, Any]:
        return {**super()._connection_arguments(), "ssl": self.tls_context}  # server name: the host


def identified(identity: Identity) -> Callable[[Connection], Awaitable[None]]:
    """redis-py's setup of a new connection, then the server's run_id claimed for `identity`'s
    node before any request (see _transport/sync/server.identified)."""

    async def identify(connection: Connection) -> str | None:
        await connection.on_connect()
        try:
            found: str | None = text(await ask(connection, "DLOCK.RUNID"))
        except redis.AuthenticationError:
            raise  # NOAUTH: no password given, said as any first request says it
        except redis.ResponseError as e:
            if not unknown_command(reason(e)):
                raise Explained(run_id_refused(reason(e))) from e
            try:  # a module older than DLOCK.RUNID: INFO server shows the same run_id
                found = run_id(await ask(connection, "INFO", "server"))
            except redis.ResponseError as refused:
                raise Explained(info_refused(reason(refused))) from refused
        return found

    async def set_up(connection: Connection) -> None:
        try:
            found = await identify(connection)
        except redis.RedisError as e:
            refused = final(e, int(connection.db))
            if refused is None:
                raise
            raise refused from e  # connecting again cannot cure it: _pure/refusals.py
        identity.check(found)

    return set_up


async def ask(connection: Connection, *args: str) -> object:
    """One request on a connection being set up, before the pool hands it out."""
    await connection.send_command(*args, check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
    return await connection.read_response()  # type: ignore[no-untyped-call, unused-ignore]


def base(timeout: float) -> dict[str, Any]:
    """Connecting (the TLS handshake included) bounded by the per-node timeout; reads are bounded
    by the caller (asyncio.wait_for), a server-side wait's being longer. RESP2."""
    return {"socket_connect_timeout": timeout, "socket_timeout": None, **ends.connection_options()}


def tls(security: Security) -> dict[str, Any]:
    assert security.tls is not None  # built whenever a node uses TLS
    return {"tls_context": security.tls}


def client(connection_class: type[Any], **kwargs: Any) -> aioredis.Redis:
    return aioredis.Redis(connection_pool=ConnectionPool(connection_class=connection_class, **kwargs))


def server_clients(node: ends.Endpoint, timeout: float, security: Security, identity: Identity) -> ClientMaker:
    """How to make a client of a single server or a ready-made client's server, each
    connection's server claimed for `identity`'s node."""
    checked = {"redis_connect_func": identified(identity)}
    if isinstance(node, ends.Single):
        kwargs = {**ends.single_kwargs(node, security), **base(timeout), **checked}
        if "path" in kwargs:
            return lambda: client(UnixDomainSocketConnection, **kwargs)
        if node.tls:
            return lambda: client(TLSConnection, **kwargs, **tls(security))
        return lambda: client(PlainConnection, **kwargs)
    if isinstance(node, ends.ReadyClient):
        ready = {**ends.ready_kwargs(node.client), **base(timeout), "retry": Retry(NoBackoff(), 0), **checked}
        return lambda: client(node.client.connection_pool.connection_class, **ready)
    raise TypeError(f"not a single server: {node!r}")


class Server:
    """One redis-server: a plain master, a sentinel-managed one, or one master of a cluster
    (`name` in errors)."""

    def __init__(self, name: str, clients: ClientMaker) -> None:
        self.name = name
        self.short = clients()
        self.waits = clients()

    async def run(self, commands: tuple[Args, ...], blocking: bool) -> list[object]:
        """One reply per command (an error reply as its ResponseError), written in one go.
        Raises what redis-py raises for a connection that fails."""
        client = self.waits if blocking else self.short
        if len(commands) == 1:  # the common case, without a pipeline object
            try:
                return [await client.execute_command(*commands[0])]  # type: ignore[no-untyped-call, unused-ignore]
            except redis.ResponseError as e:
                return [e]
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        replies: list[object] = await pipe.execute(raise_on_error=False)
        return replies

    async def forget_idle(self) -> None:
        """Closes the idle connections (those of waits in flight stay): the next requests connect
        afresh (and a sentinel-managed master's connections ask the sentinels where it is)."""
        for client in (self.short, self.waits):
            await client.connection_pool.disconnect(inuse_connections=False)

    async def close(self) -> None:
        """Closes every connection, the sentinels' included. The pools are disconnected by name:
        a client made on a pool given to it leaves the pool open when closed (redis-py 5+)."""
        sentinels = getattr(self.short.connection_pool, "sentinel_manager", None)  # a sentinel node's own
        for client in [self.short, self.waits, *(sentinels.sentinels if sentinels is not None else [])]:
            await client.aclose()
            await client.connection_pool.disconnect()
