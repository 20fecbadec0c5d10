"""One redis-server as the asyncio transport reaches it: a redis.asyncio client for short
requests and one for server-side waits, which block their connection (each wait gets a
connection of its own from that client's pool)."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

from .._commands import Args
from .._sync_server import connection_options


def make_client(url: str, timeout: float) -> aioredis.Redis:
    """RESP2, no handshake beyond connecting (see connection_options)."""
    client: aioredis.Redis = aioredis.Redis.from_url(
        url, socket_connect_timeout=timeout, socket_timeout=None, **connection_options()
    )
    return client


class Server:
    """One redis-server: a plain master, or one master of a cluster (`name` in errors)."""

    def __init__(self, name: str, url: str, timeout: float) -> None:
        self.name = name
        self.short = make_client(url, timeout)
        self.waits = make_client(url, timeout)

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

    async def close(self) -> None:
        await self.short.aclose()
        await self.waits.aclose()
