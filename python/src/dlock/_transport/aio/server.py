"""One redis-server as the asyncio transport reaches it: a redis.asyncio client for short
requests and one for server-side waits, which block their connection (each wait gets a
connection of its own from that client's pool). The clients are made by _transport/aio/connect.py."""

from __future__ import annotations

import redis

from ..._pure.commands import Args
from .connect import ClientMaker


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
