"""A sentinel-managed master as one quorum node, sync flavour (the pure parts in
_pure/sentinel.py): its connections ask the sentinels for the master on connecting (redis-py's
Sentinel, with dlock's messages) and check with ROLE that it is one; redis-py turns a READONLY
reply into a connection error, so the request is repeated on a fresh connection, which asks the
sentinels again. Each is otherwise a server's connection (_transport/sync/server.py)."""

from __future__ import annotations

from typing import Any

import redis
from redis.connection import Connection, ConnectionPool
from redis.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection

from ..._pure import urls as ends
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.replies import reason
from ..._pure.sentinel import master_address, not_a_master
from .server import PlainConnection, TLSConnection, base, identified, tls


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
