"""A sentinel-managed master as one quorum node, asyncio flavour (the twin of
_transport/sync/sentinel.py; the pure parts in _pure/sentinel.py): clients of the master
redis-py's Sentinel finds, each connection checked with ROLE."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection

from ..._pure import urls as ends
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.replies import reason
from ..._pure.sentinel import master_address, not_a_master
from .server import ClientMaker, PlainConnection, TLSConnection, base, client, identified, tls


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


def sentinel_clients(group: ends.SentinelGroup, timeout: float, security: Security, identity: Identity) -> ClientMaker:
    """Clients of the master from redis-py's Sentinel (see _transport/sync/sentinel.sentinel_pool)."""
    connection: type[Connection] = TLSConnection if group.tls else PlainConnection
    extra = tls(security) if group.tls else {}
    sentinels = Sentinels([])  # type: ignore[no-untyped-call, unused-ignore]
    asking = {**base(timeout), "socket_timeout": timeout, **security.sentinel_login.kwargs(), **extra}
    sentinels.sentinels = [client(connection, host=host, port=port, **asking) for host, port in group.sentinels]
    master = {"connection_class": SentinelTLS if group.tls else SentinelPlain, **base(timeout), **extra}
    master.update(ends.sentinel_master_login(group, security))
    master["redis_connect_func"] = identified(identity)  # each master found claims its server
    return lambda: sentinels.master_for(group.service, redis_class=aioredis.Redis, **master)
