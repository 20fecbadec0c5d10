"""The asyncio transport: per server one redis.asyncio client for short requests (fanned out with
asyncio.gather, each bounded by the per-node timeout plus any replica acknowledgement's time) and
one for server-side waits, which block their connection: each wait gets a connection of its own
from that client's pool. A call that is cancelled or times out closes its connection (redis-py
does), so a node drops an abandoned waiter at once.

A quorum node is a plain master (`Master`) or a whole Redis Cluster (`ClusterNode`,
asyncio/_cluster.py); the request and its WAIT go in one pipeline (one write)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

import redis

from .. import _ack
from .._commands import Args
from .._options import Options
from .._quorum_nodes import QuorumNodes
from .._replies import NodeTimeout, answer, reason
from ..errors import NodeFailure
from ._cluster import ClusterNode
from ._server import Server


class Member(Protocol):
    """One quorum node, as the rounds reach it."""

    name: str
    ack: _ack.Ack | None

    async def call(self, request: Args, blocking: bool, allowed: float) -> object: ...

    async def close(self) -> None: ...


class Master:
    """A quorum node that is one master."""

    def __init__(self, url: str, timeout: float, ack: _ack.Ack | None) -> None:
        self.name = url
        self.ack = ack
        self.server = Server(url, url, timeout)

    async def call(self, request: Args, blocking: bool, allowed: float) -> object:
        """The answer to `request` within `allowed` seconds, or a NodeFailure saying why not."""
        try:
            replies = await asyncio.wait_for(self.server.run(_ack.commands(request, self.ack), blocking), allowed)
        except asyncio.TimeoutError:
            return NodeTimeout(self.name, f"timed out after {allowed * 1000:.0f}ms")
        except (redis.RedisError, OSError) as e:
            return NodeFailure(self.name, reason(e))
        return answer(self.name, request, replies, self.ack)

    async def close(self) -> None:
        await self.server.close()


class Nodes(QuorumNodes[Member]):
    def __init__(self, urls: Sequence[str], opts: Options) -> None:
        super().__init__(urls, opts, Master, ClusterNode)

    async def call(self, node: int, args: Args, timeout: float, blocking: bool = False) -> object:
        """One request within `timeout` (plus its acknowledgement's time); its reply, or a
        NodeFailure naming the node and why."""
        return await self.members[node].call(args, blocking, self.allowed(node, args, timeout))

    async def fan_out(self, calls: Sequence[tuple[int, Args]]) -> list[object]:
        """Sends each (node, command) in parallel; replies in order, failures as NodeFailure."""
        return list(await asyncio.gather(*(self.call(node, args, self.timeout) for node, args in calls)))

    async def everywhere(self, args: Args) -> list[object]:
        return await self.fan_out([(n, args) for n in range(len(self.members))])

    async def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        return await self.call(node, args, timeout, blocking=True)

    async def close(self) -> None:
        for target in self.members:
            await target.close()
