"""The nodes a LockManager is given, checked before anything connects: URL strings or ready-made
redis-py clients, each one quorum node (the URLs as client/src/transport/urls.rs reads them;
conformance/urls.json). Schemes are read in any case.

- `redis://`, `rediss://` (TLS), `unix://`: one master (`Single`); the query may set `db` and
  `client_name`, nothing else;
- `redis+cluster://`, `rediss+cluster://`: a whole Redis Cluster (`Seed`; port 6379 by default);
- `redis+sentinel://`, `rediss+sentinel://`: the master a group of sentinels names
  (`SentinelGroup`; port 26379 by default);
- a `redis.Redis` (sync) or `redis.asyncio.Redis` (asyncio) client: the server it reaches
  (`ReadyClient`), with its own connection settings.

Every node has a `name` for errors, status and `LockManager.nodes`: its URL with any password
hidden (`redis://app:***@host:6379`)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
import redis.asyncio
import redis.connection

from .connect import Login, Security, redact

SINGLE_SCHEMES = ("redis://", "rediss://", "unix://")
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
CLUSTER_PORT = 6379
SENTINEL_SCHEMES = ("redis+sentinel://", "rediss+sentinel://")
SENTINEL_PORT = 26379
#: Connection arguments of a ready-made client that need RESP3 (redis-py 8's maintenance
#: notifications, on by default there): left out, as dlock speaks RESP2.
RESP3_ONLY = ("maint_notifications_",)
#: Query parameters a single-server URL may carry; the rest are the manager's (timeouts, TLS).
URL_QUERY = ("db", "client_name")
#: The highest database number a server's `databases` setting (an int) can make.
MAX_DB = 2**31 - 2


@dataclass(frozen=True)
class Single:
    """One server: redis-py's connection arguments from the URL (host and port or path, db,
    credentials, client name), and whether it speaks TLS."""

    name: str
    kwargs: dict[str, Any] = field(repr=False)
    tls: bool
    replicated: ClassVar[bool] = False

    @property
    def has_login(self) -> bool:
        return "username" in self.kwargs or "password" in self.kwargs


@dataclass(frozen=True)
class Seed:
    """A checked cluster URL: `name` (the URL, password hidden), the seed's address, and how
    every master is reached: at its own address with the seed's TLS and login (the manager's
    username / password when the URL has none)."""

    name: str
    address: str
    tls: bool
    login: Login
    replicated: ClassVar[bool] = True


def cluster_seed(url: str) -> Seed:
    """Checks a redis+cluster:// (or rediss+cluster://, TLS) URL before anything connects;
    ValueError saying what is wrong."""
    name = redact(url)

    def bad(why: str) -> ValueError:
        return ValueError(f"cluster URL {name!r}: {why}")

    if not url.startswith(CLUSTER_SCHEMES):
        raise bad(f"expected {CLUSTER_SCHEMES[0]}host:port")
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as e:
        raise bad(f"bad port ({e})") from None
    if not parts.hostname:
        raise bad("a host is required")
    if port is None:
        port = CLUSTER_PORT  # as for any Redis server
    if parts.path.strip("/") not in ("", "0"):
        raise bad("Redis Cluster has only database 0")
    if parts.query:
        raise bad("query parameters are not supported")
    if parts.username and parts.password is None:
        raise bad("a user name needs a password (user:password@)")
    login = Login(unquote(parts.username or "") or None, unquote(parts.password or "")) if parts.password else Login()
    return Seed(name, address(parts.hostname, port), url.startswith("rediss+"), login)


def address(host: str, port: int) -> str:
    """`host:port`, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class SentinelGroup:
    """The master that `sentinels` name `service`; `login` is the master's (from the URL), the
    sentinels' own comes from the manager's sentinel_username / sentinel_password."""

    name: str
    sentinels: tuple[tuple[str, int], ...]
    service: str
    tls: bool
    login: Login
    replicated: ClassVar[bool] = True


@dataclass(frozen=True)
class ReadyClient:
    """A redis-py client the application configured: dlock makes its own connections with the
    client's connection class and arguments. `replicated` when sentinels manage it."""

    name: str
    client: Any = field(repr=False)
    replicated: bool
    tls: ClassVar[bool] = False  # the client's own settings say; none of the manager's apply


Endpoint = Single | Seed | SentinelGroup | ReadyClient


def check_nodes(nodes: object, client_type: type) -> list[Endpoint]:
    """The nodes, checked: a non-empty sequence of URL strings and `client_type` clients (the
    flavour's own redis-py client class), distinct. ValueError / TypeError saying what is wrong,
    with no password in it."""
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence):
        raise TypeError(f"nodes must be a list of URL strings or clients, got {type(nodes).__name__}")
    endpoints = [endpoint(node, client_type) for node in nodes]
    if not endpoints:
        raise ValueError("nodes must name at least one Redis URL")
    names = [e.name for e in endpoints]
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:  # different texts can reach one server too: _pure/identity.py
        raise ValueError(f"node {twice} is given twice: list each server once")
    return endpoints


def unknown_scheme(name: str) -> str:
    """The words every client uses for a URL of no known scheme (conformance/errors.json)."""
    *known, last = SINGLE_SCHEMES + CLUSTER_SCHEMES + SENTINEL_SCHEMES
    what = "an unknown scheme" if "://" in name else "no scheme"
    return f"node URL {json.dumps(name)} has {what}: use {', '.join(known)} or {last}"


def endpoint(node: object, client_type: type) -> Endpoint:
    if isinstance(node, str):
        node = lowercase_scheme(node)
        if node.startswith(CLUSTER_SCHEMES):
            return cluster_seed(node)
        if node.startswith(SENTINEL_SCHEMES):
            return sentinel_group(node)
        if node.startswith(SINGLE_SCHEMES):
            return single(node)
        raise ValueError(unknown_scheme(redact(node)))
    if isinstance(node, client_type):
        return ready_client(node)
    if isinstance(node, (redis.Redis, redis.asyncio.Redis)):
        raise TypeError(f"this LockManager takes {client_type.__module__}.{client_type.__name__} clients, got {node!r}")
    if isinstance(node, (redis.RedisCluster, redis.asyncio.RedisCluster)):
        raise TypeError("a RedisCluster client is not a node: give its URL as redis+cluster://host:port")
    raise TypeError(f"every node must be a URL string or a redis-py client, got {type(node).__name__}")


def lowercase_scheme(url: str) -> str:
    """`url` with its scheme in lower case: schemes are read in any case (`REDIS://h`)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.lower()}{sep}{rest}" if sep else url


def single(url: str) -> Single:
    name = redact(url)
    check_query(url, name)
    try:
        kwargs: dict[str, Any] = redis.connection.parse_url(url)  # type: ignore[no-untyped-call, unused-ignore]
        port = None if url.startswith("unix://") else urlsplit(url).port
    except ValueError as e:
        raise ValueError(f"node URL {name!r}: {e}") from None
    kwargs.pop("connection_class", None)  # each flavour has its own
    if url.startswith("unix://") and not kwargs.get("path"):
        raise ValueError(f"node URL {name!r}: a socket path is required (unix:///path/to/redis.sock)")
    if port == 0:  # redis-py would read it as no port, 6379
        raise ValueError(f"node URL {name!r}: port 0 out of range 1-65535")
    check_database(url, name, kwargs.get("db", 0))
    return Single(name, kwargs, tls=url.startswith("rediss://"))


def check_query(url: str, name: str) -> None:
    """A single server's query: db and client_name, each at most once (which of two would count
    is nobody's guess)."""
    keys = [key for key, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
    for i, key in enumerate(keys):
        if key not in URL_QUERY:
            raise ValueError(
                f"node URL {name!r}: query parameter {key!r} is not supported (only {', '.join(URL_QUERY)};"
                " timeouts and TLS settings are LockManager keywords)"
            )
        if key in keys[:i]:
            raise ValueError(f"node URL {name!r}: query parameter {key!r} given twice")


def check_database(url: str, name: str, db: object) -> None:
    """A database number a server could have: digits in the path (redis-py ignores others), and
    from 0 to MAX_DB (a server's `databases` is an int), as every client checks it."""
    path = "" if url.startswith("unix://") else urlsplit(url).path.lstrip("/")
    if path and not path.isdigit():
        raise ValueError(f"node URL {name!r}: bad database {path!r}")
    if not isinstance(db, int) or not 0 <= db <= MAX_DB:
        raise ValueError(
            f"node URL {name!r}: database {db}: a database number is from 0 to {MAX_DB} (below the server's databases)"
        )


def sentinel_group(url: str) -> SentinelGroup:
    """`redis+sentinel://[user:password@]host[:port][,host[:port]...]/MASTER_NAME` (port 26379
    by default); the credentials are the master's."""
    name = redact(url)

    def bad(why: str) -> ValueError:
        return ValueError(f"sentinel URL {name!r}: {why}")

    netloc, _, path = url.split("://", 1)[1].partition("/")
    if "?" in path or "#" in path:
        raise bad("query parameters are not supported")
    service = unquote(path)
    if not service or "/" in service:
        raise bad("the master's name is required: redis+sentinel://host:port[,host:port...]/MASTER_NAME")
    userinfo, at, hosts = netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if at and not colon:
        raise bad("a user name needs a password (user:password@)")
    login = Login(unquote(user) or None, unquote(password)) if at else Login()
    return SentinelGroup(
        name, tuple(sentinel_address(host, bad) for host in hosts.split(",")), service, _tls(url), login
    )


def sentinel_address(host: str, bad: Any) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{host}")
        port = parts.port
    except ValueError as e:
        raise bad(f"bad sentinel address {host!r} ({e})") from None
    if not parts.hostname:
        raise bad(f"bad sentinel address {host!r} (a host is required)")
    return parts.hostname, port or SENTINEL_PORT


def _tls(url: str) -> bool:
    return url.startswith("rediss")


def ready_client(client: Any) -> ReadyClient:
    pool = client.connection_pool
    sentinels = getattr(pool, "sentinel_manager", None)
    if sentinels is not None:  # redis-py's SentinelConnectionPool, sync or asyncio
        hosts = ",".join(
            address(s.connection_pool.connection_kwargs.get("host", "?"), s.connection_pool.connection_kwargs["port"])
            for s in sentinels.sentinels
        )
        return ReadyClient(f"redis+sentinel://{hosts}/{pool.service_name}", client, replicated=True)
    kwargs = pool.connection_kwargs
    if "path" in kwargs:
        where = f"unix://{kwargs['path']}"
    else:
        scheme = "rediss" if "SSL" in pool.connection_class.__name__ else "redis"
        where = f"{scheme}://{address(str(kwargs.get('host', 'localhost')), int(kwargs.get('port', 6379)))}"
    db = int(kwargs.get("db") or 0)
    if db:
        where += f"?db={db}" if "path" in kwargs else f"/{db}"
    return ReadyClient(where, client, replicated=False)


def connection_options() -> dict[str, Any]:
    """What every connection dlock makes is set to: RESP2 whatever redis-py's default (8.x speaks
    RESP3: a HELLO round trip per connection, other reply shapes), and no CLIENT SETINFO handshake
    (two more round trips per connection); redis-py 7+ spells that driver_info=None, older ones
    lib_name=lib_version=None."""
    if "driver_info" in inspect.signature(redis.connection.AbstractConnection.__init__).parameters:
        return {"protocol": 2, "driver_info": None}
    return {"protocol": 2, "lib_name": None, "lib_version": None}


def single_kwargs(node: Single, security: Security) -> dict[str, Any]:
    """How to reach a single server: the URL's arguments, with the manager's login when the URL
    has none."""
    return {**node.kwargs, **({} if node.has_login else security.login.kwargs())}


def cluster_master_kwargs(seed: Seed, master: str, security: Security) -> dict[str, Any]:
    """How to reach one master of a cluster: at its address, as the seed is reached."""
    host, _, port = master.rpartition(":")
    return {"host": host.strip("[]"), "port": int(port), **(seed.login or security.login).kwargs()}


def sentinel_master_login(group: SentinelGroup, security: Security) -> dict[str, Any]:
    return (group.login or security.login).kwargs()


def ready_kwargs(client: Any) -> dict[str, Any]:
    """A ready-made client's connection arguments, less what dlock must decide itself: replies
    as bytes in RESP2, no retries (the quorum retries), dlock's timeouts (set by the caller)."""
    kwargs = {
        name: value
        for name, value in client.connection_pool.connection_kwargs.items()
        if not name.startswith(RESP3_ONLY)
    }
    kwargs.update(connection_options(), decode_responses=False, retry_on_timeout=False, retry_on_error=[])
    return kwargs
