"""How the asyncio transport connects (the twin of dlock/_transport/sync/connect.py, which says why each
part is there): the redis.asyncio clients of each server, made with dlock's connection classes
(a connection closed before its first reply Explained; TLS with the manager's one context;
sentinel-managed masters checked with ROLE), or with a ready-made client's class and arguments;
every connection's server claimed for its quorum node before any request (_pure/identity.py)."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection
from redis.backoff import NoBackoff

from ..._pure import urls as ends
from ..._pure.cluster import Seed
from ..._pure.diagnosis import PLAIN_TO_TLS, REFUSED_AFTER_HANDSHAKE, Explained, NamesEarlyClose
from ..._pure.identity import Identity, info_refused, run_id, run_id_refused, text, unknown_command
from ..._pure.refusals import final
from ..._pure.replies import reason
from ..._pure.security import Security
from ..._pure.sentinel import master_address, not_a_master

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


class MasterConnection(SentinelManagedConnection):
    async def connect_to(self, address: tuple[str, int]) -> None:
        await super().connect_to(address)  # type: ignore[no-untyped-call, unused-ignore]
        await self.send_command("ROLE", check_health=False)  # type: ignore[no-untyped-call, unused-ignore]
        try:
            role = await self.read_response()
        except redis.ResponseError as e:
            await self.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise redis.ConnectionError(f"{address[0]}:{address[1]}: ROLE refused ({reason(e)})") from e
        refusal = not_a_master(address, role)
        if refusal is not None:
            await self.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            raise redis.ConnectionError(refusal)


class SentinelPlain(MasterConnection, PlainConnection):
    pass


class SentinelTLS(MasterConnection, TLSConnection):
    pass


class Sentinels(Sentinel):
    async def discover_master(self, service_name: str) -> tuple[str, int]:
        failures = []
        for i, sentinel in enumerate(self.sentinels):
            kwargs = sentinel.connection_pool.connection_kwargs
            where = f"sentinel {kwargs['host']}:{kwargs['port']}"
            try:
                reply = await sentinel.execute_command("SENTINEL", "MASTER", service_name)  # type: ignore[no-untyped-call, unused-ignore]
                found = master_address(service_name, reply)
            except (redis.RedisError, OSError) as e:
                found = reason(e)
            if isinstance(found, tuple):
                self.sentinels[0], self.sentinels[i] = sentinel, self.sentinels[0]
                return found
            failures.append(f"{where}: {found}")
        raise MasterNotFoundError(f"no sentinel names a master for {service_name!r} ({'; '.join(failures)})")


def identified(identity: Identity) -> Callable[[Connection], Awaitable[None]]:
    """redis-py's setup of a new connection, then the server's run_id claimed for `identity`'s
    node before any request (see _transport/sync/connect.identified)."""

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


def clients(node: ends.Endpoint, timeout: float, security: Security, identity: Identity) -> ClientMaker:
    """How to make a client of a single server, a sentinel-managed master or a ready-made
    client's server, each connection's server claimed for `identity`'s node."""
    checked = {"redis_connect_func": identified(identity)}
    if isinstance(node, ends.Single):
        kwargs = {**ends.single_kwargs(node, security), **base(timeout), **checked}
        if "path" in kwargs:
            return lambda: client(UnixDomainSocketConnection, **kwargs)
        if node.tls:
            return lambda: client(TLSConnection, **kwargs, **tls(security))
        return lambda: client(PlainConnection, **kwargs)
    if isinstance(node, ends.SentinelGroup):
        return sentinel_clients(node, timeout, security, identity)
    if isinstance(node, ends.ReadyClient):
        ready = {**ends.ready_kwargs(node.client), **base(timeout), "retry": Retry(NoBackoff(), 0), **checked}
        return lambda: client(node.client.connection_pool.connection_class, **ready)
    raise TypeError(f"not a single server: {node!r}")


def cluster_master_clients(
    seed: Seed, master: str, timeout: float, security: Security, identity: Identity
) -> ClientMaker:
    checked = {"redis_connect_func": identified(identity)}
    kwargs = {**ends.cluster_master_kwargs(seed, master, security), **base(timeout), **checked}
    if seed.tls:
        return lambda: client(TLSConnection, **kwargs, **tls(security))
    return lambda: client(PlainConnection, **kwargs)


def sentinel_clients(group: ends.SentinelGroup, timeout: float, security: Security, identity: Identity) -> ClientMaker:
    """Clients of the master from redis-py's Sentinel (see _transport/sync/connect.sentinel_pool)."""
    connection: type[Connection] = TLSConnection if group.tls else PlainConnection
    extra = tls(security) if group.tls else {}
    sentinels = Sentinels([])  # type: ignore[no-untyped-call, unused-ignore]
    asking = {**base(timeout), "socket_timeout": timeout, **security.sentinel_login.kwargs(), **extra}
    sentinels.sentinels = [client(connection, host=host, port=port, **asking) for host, port in group.sentinels]
    master = {"connection_class": SentinelTLS if group.tls else SentinelPlain, **base(timeout), **extra}
    master.update(ends.sentinel_master_login(group, security))
    master["redis_connect_func"] = identified(identity)  # each master found claims its server
    return lambda: sentinels.master_for(group.service, redis_class=aioredis.Redis, **master)
