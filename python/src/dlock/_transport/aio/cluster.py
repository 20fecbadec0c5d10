"""A Redis Cluster as one quorum node, asyncio flavour: each request goes to the master serving
its resource's slot (decisions in dlock/_pure/cluster.py), each master a Server with its own short and
wait clients, as a plain master has."""

from __future__ import annotations

import asyncio
import time

import redis

from ..._pure import ack as _ack
from ..._pure import urls as ends
from ..._pure.cluster import CLUSTER_SLOTS, MAX_REDIRECTS, SlotMap, Topology, host_of, redirect, with_asking
from ..._pure.commands import Args, key_of
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.refusals import node_failure
from ..._pure.replies import NodeTimeout, answer, reason
from ...errors import NodeFailure
from .server import ClientMaker, PlainConnection, Server, TLSConnection, base, client, identified, tls


class Cluster:
    def __init__(
        self, seed: ends.Seed, timeout: float, security: Security, ack: _ack.Ack | None, identity: Identity
    ) -> None:
        self.name = seed.name
        self.ack = ack
        self.timeout = timeout
        self.topology = Topology(
            seed,
            lambda address: Server(
                address, cluster_master_clients(seed, address, timeout, security, identity.another())
            ),
        )
        self.refreshing: asyncio.Lock | None = None  # one slot-map read at a time; made in the loop

    async def call(self, request: Args, blocking: bool, allowed: float) -> object:
        """The answer to `request` from the master serving it, redirects followed, all within
        `allowed` seconds; or a NodeFailure saying why not."""
        deadline = time.monotonic() + allowed
        address = await self.master_of(key_of(request), deadline)
        if isinstance(address, NodeFailure):
            return address
        commands, asking = _ack.commands(request, self.ack), False
        for redirects in range(MAX_REDIRECTS + 1):
            server = self.topology.master(address)
            replies = await self.ask(server, with_asking(commands, asking), blocking, deadline)
            if isinstance(replies, NodeFailure):
                return replies
            replies = replies[1:] if asking else replies  # ASKING's OK is not the request's
            to = redirect(replies[0]) if replies else None
            if to is None:
                return answer(self.name, request, replies, self.ack, via=f"master {server.name}: ")
            follow = self.topology.follow(to, redirects)
            if follow is None:
                break
            address, asking = follow, to.ask
        return NodeFailure(self.name, f"more than {MAX_REDIRECTS} redirects for {key_of(request)!r}")

    async def ask(
        self, server: Server, commands: tuple[Args, ...], blocking: bool, deadline: float
    ) -> list[object] | NodeFailure:
        """`commands` to one master by `deadline`. A master that does not answer is forgotten,
        and with it the slot map: the next call finds out whether it failed over."""
        allowed = max(0.0, deadline - time.monotonic())
        kind: type[NodeFailure] = NodeFailure
        try:
            return await asyncio.wait_for(server.run(commands, blocking), allowed)
        except asyncio.TimeoutError:
            why, kind = f"timed out after {allowed * 1000:.0f}ms", NodeTimeout
        except (redis.RedisError, OSError) as e:
            failure = node_failure(self.name, e)  # a refusal's kind kept
            why, kind = failure.reason, type(failure)
        forgotten = self.topology.forget_master(server.name)
        if forgotten is not None:
            await forgotten.close()
        return kind(self.name, f"master {server.name}: {why}")

    async def master_of(self, resource: str, deadline: float) -> str | NodeFailure:
        """The master serving `resource`, reading the slot map first if it is not known."""
        known = self.topology.known_master_of(resource)
        if known is not None:
            return known
        self.refreshing = self.refreshing or asyncio.Lock()
        async with self.refreshing:
            known = self.topology.known_master_of(resource)  # another call read it meanwhile?
            if known is not None:
                return known
            reasons = []
            for address in self.topology.to_ask_for_slots():
                try:
                    slots = await self.slots_from(address, deadline)
                except asyncio.TimeoutError:
                    reasons.append(f"{address}: timed out")
                    continue
                except (redis.RedisError, OSError) as e:
                    reasons.append(f"{address}: {reason(e)}")
                    continue
                except ValueError as e:  # not a slot map
                    reasons.append(f"{address}: {e}")
                    continue
                return self.topology.learn(slots, resource) or NodeFailure(
                    self.name, f"the slot of {resource!r} is not served"
                )
        return NodeFailure(self.name, f"cannot read the slot map ({'; '.join(reasons)})")

    async def slots_from(self, address: str, deadline: float) -> SlotMap:
        """The slot map as the server at `address` sees it, within the per-node timeout."""
        server = self.topology.master(address)
        bound = max(0.0, min(self.timeout, deadline - time.monotonic()))
        reply = (await asyncio.wait_for(server.run((CLUSTER_SLOTS,), False), bound))[0]
        if isinstance(reply, Exception):
            raise ValueError(reason(reply))
        return SlotMap.parse(reply, host_of(address))

    async def close(self) -> None:
        masters, self.topology.masters = list(self.topology.masters.values()), {}
        for server in masters:
            await server.close()


def cluster_master_clients(
    seed: ends.Seed, master: str, timeout: float, security: Security, identity: Identity
) -> ClientMaker:
    checked = {"redis_connect_func": identified(identity)}
    kwargs = {**ends.cluster_master_kwargs(seed, master, security), **base(timeout), **checked}
    if seed.tls:
        return lambda: client(TLSConnection, **kwargs, **tls(security))
    return lambda: client(PlainConnection, **kwargs)
