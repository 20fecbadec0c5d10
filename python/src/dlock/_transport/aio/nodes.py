"""The asyncio transport: per server one redis.asyncio client for short requests (fanned out with
asyncio.gather, each bounded by the per-node timeout plus any replica acknowledgement's time) and
one for server-side waits, which block their connection: each wait gets a connection of its own
from that client's pool. A call that is cancelled or times out closes its connection (redis-py
does), so a node drops an abandoned waiter at once.

A quorum node is a plain master (`Master`) or a whole Redis Cluster (`Cluster`,
_transport/aio/cluster.py); the request and its WAIT go in one pipeline (one write)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Protocol

import redis
import redis.asyncio as aioredis

from ..._pure import ack as _ack
from ..._pure.commands import Args
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.nodes import QuorumNodes
from ..._pure.options import Options
from ..._pure.refusals import node_failure
from ..._pure.replies import NodeTimeout, answer
from ..._pure.urls import Endpoint, SentinelGroup
from ...errors import NodeFailure
from .cluster import Cluster
from .sentinel import sentinel_clients
from .server import Server, server_clients


class Member(Protocol):
    """One quorum node, as the rounds reach it."""

    name: str
    ack: _ack.Ack | None

    async def call(self, request: Args, blocking: bool, allowed: float) -> object: ...

    async def close(self) -> None: ...


class Master:
    """A quorum node that is one master: named by a URL, by sentinels, or a ready-made client's."""

    def __init__(
        self, node: Endpoint, timeout: float, security: Security, ack: _ack.Ack | None, identity: Identity
    ) -> None:
        self.name = node.name
        self.ack = ack
        if isinstance(node, SentinelGroup):
            clients = sentinel_clients(node, timeout, security, identity)
        else:
            clients = server_clients(node, timeout, security, identity)
        self.server = Server(node.name, clients)
        # A sentinel-managed master's connection to a master since demoted fails (redis-py turns
        # READONLY into a connection error): the request is made once more, on a new connection,
        # which asks the sentinels again. (A plain master's pool replaces a connection found
        # closed before using it.)
        self.follows_failovers = node.replicated

    async def call(self, request: Args, blocking: bool, allowed: float) -> object:
        """The answer to `request` within `allowed` seconds, or a NodeFailure saying why not."""
        commands = _ack.commands(request, self.ack)
        deadline = time.monotonic() + allowed
        try:
            try:
                replies = await self.run(commands, blocking, deadline)
            except redis.ConnectionError as e:
                if not self.follows_failovers or type(e) is not redis.ConnectionError:  # a subclass is a reply
                    raise
                replies = await self.run(commands, blocking, deadline)
        except asyncio.TimeoutError:
            return await self.after(NodeTimeout(self.name, f"timed out after {allowed * 1000:.0f}ms"))
        except (redis.RedisError, OSError) as e:
            return await self.after(node_failure(self.name, e))
        return await self.after(answer(self.name, request, replies, self.ack))

    async def after(self, outcome: object) -> object:
        """A sentinel-managed master that failed (refused, unreachable, short of acknowledgements:
        maybe no longer the master) is asked for on new connections, from the sentinels. (A call
        that timed out closed its own connection; a wait runs out of time in normal use.)"""
        if self.follows_failovers and isinstance(outcome, NodeFailure) and not isinstance(outcome, NodeTimeout):
            await self.server.forget_idle()
        return outcome

    async def run(self, commands: tuple[Args, ...], blocking: bool, deadline: float) -> list[object]:
        return await asyncio.wait_for(self.server.run(commands, blocking), max(0.0, deadline - time.monotonic()))

    async def close(self) -> None:
        await self.server.close()


class Nodes(QuorumNodes[Member]):
    #: The ready-made clients this flavour takes as nodes.
    client_type = aioredis.Redis

    def __init__(self, endpoints: Sequence[Endpoint], opts: Options, security: Security) -> None:
        super().__init__(endpoints, opts, security, (Master, Cluster))

    async def call(self, node: int, args: Args, timeout: float, blocking: bool = False) -> object:
        """One request within `timeout` (plus its acknowledgement's time); its reply, or a
        NodeFailure naming the node and why. A node found to reach another node's server is
        never asked again."""
        refused = self.registry.refused(node)
        if refused is not None:
            return NodeFailure(self.names[node], refused)
        try:
            return await self.members[node].call(args, blocking, self.allowed(node, args, timeout))
        finally:
            self.registry.met(node)

    async def meet_all(self, within: float) -> None:
        """Waits, at most `within` seconds, until every node was met once (_pure/identity.py):
        only a manager's first lock waits. Polled: the nodes' connections say so as they are
        made, in the loop's own tasks."""
        deadline = time.monotonic() + within
        while not self.registry.all_met() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)

    async def fan_out(self, calls: Sequence[tuple[int, Args]], timeout: float | None = None) -> list[object]:
        """Sends each (node, command) in parallel, each within `timeout` (default: the per-node
        timeout); replies in order, failures as NodeFailure."""
        bound = self.timeout if timeout is None else timeout
        return list(await asyncio.gather(*(self.call(node, args, bound) for node, args in calls)))

    async def everywhere(self, args: Args, timeout: float | None = None) -> list[object]:
        return await self.fan_out([(n, args) for n in range(len(self.members))], timeout)

    async def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        return await self.call(node, args, timeout, blocking=True)

    async def close(self) -> None:
        for target in self.members:
            await target.close()
