"""The asyncio transport: one redis.asyncio client per node for short requests (fanned out with
asyncio.gather, each bounded by the per-node timeout) and one for server-side waits, which block
their connection: each wait gets a connection of its own from that client's pool. A call that
is cancelled or times out closes its connection (redis-py does), so a node drops an abandoned
waiter at once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import redis
import redis.asyncio as aioredis

from .._commands import Args
from .._sync_nodes import connection_options, reason
from ..errors import NodeFailure


def make_client(url: str, timeout: float) -> aioredis.Redis:
    """RESP2, no handshake beyond connecting (see connection_options)."""
    client: aioredis.Redis = aioredis.Redis.from_url(
        url, socket_connect_timeout=timeout, socket_timeout=None, **connection_options()
    )
    return client


class Nodes:
    def __init__(self, urls: Sequence[str], timeout: float) -> None:
        self.timeout = timeout
        self.names = list(urls)
        self.clients = [make_client(url, timeout) for url in urls]
        self.wait_clients = [make_client(url, timeout) for url in urls]

    def __len__(self) -> int:
        return len(self.clients)

    async def call(self, node: int, args: Args, timeout: float, blocking: bool = False) -> object:
        """One request; its reply, or a NodeFailure naming the node and why."""
        client = (self.wait_clients if blocking else self.clients)[node]
        try:
            return await asyncio.wait_for(client.execute_command(*args), timeout)  # type: ignore[no-untyped-call, unused-ignore]
        except asyncio.TimeoutError:
            return NodeFailure(self.names[node], f"timed out after {self.timeout * 1000:.0f}ms")
        except (redis.RedisError, OSError) as e:
            return NodeFailure(self.names[node], reason(e))

    async def fan_out(self, calls: Sequence[tuple[int, Args]]) -> list[object]:
        """Sends each (node, command) in parallel; replies in order, failures as NodeFailure."""
        return list(await asyncio.gather(*(self.call(node, args, self.timeout) for node, args in calls)))

    async def everywhere(self, args: Args) -> list[object]:
        return await self.fan_out([(n, args) for n in range(len(self.clients))])

    async def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        return await self.call(node, args, timeout, blocking=True)

    async def close(self) -> None:
        for client in self.clients + self.wait_clients:
            await client.aclose()
