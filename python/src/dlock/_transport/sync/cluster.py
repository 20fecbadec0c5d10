"""A Redis Cluster as one quorum node, sync flavour: each request goes to the master serving its
resource's slot (decisions in _pure/cluster.py), each master a Server with its own short and wait
connections, as a plain master has."""

from __future__ import annotations

import threading
import time

from redis.connection import ConnectionPool

from ..._pure import ack as _ack
from ..._pure import urls as ends
from ..._pure.cluster import CLUSTER_SLOTS, MAX_REDIRECTS, SlotMap, Topology, host_of, redirect, with_asking
from ..._pure.commands import Args, key_of
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.replies import answer, reason
from ...errors import NodeFailure
from .server import Packed, PlainConnection, Sent, Server, TLSConnection, base, identified, tls


class Cluster:
    """Thread-safe: the topology is shared by the caller, watchdogs and drain threads; one
    slot-map read at a time (the others wait for its result)."""

    def __init__(
        self, seed: ends.Seed, timeout: float, security: Security, ack: _ack.Ack | None, identity: Identity
    ) -> None:
        self.name = seed.name
        self.ack = ack
        self.timeout = timeout
        self.identity = identity
        self.topology = Topology(
            seed,
            lambda address: Server(address, cluster_master_pool(seed, address, timeout, security, identity.another())),
        )
        self.lock = threading.Lock()

    def connected(self, request: Args, blocking: bool) -> bool:
        """Whether the master of `request` is known and a connection to it is at hand."""
        with self.lock:
            address = self.topology.known_master_of(key_of(request))
            server = self.topology.masters.get(address) if address is not None else None
        return server is not None and server.has_idle(blocking)

    def send(self, request: Args, blocking: bool, packed: Packed, deadline: float) -> Sent | NodeFailure:
        address = self.master_of(key_of(request), deadline)
        if isinstance(address, NodeFailure):
            return address
        return self.send_to(address, request, blocking, packed, asking=False, redirects=0)

    def send_to(
        self, address: str, request: Args, blocking: bool, packed: Packed, asking: bool, redirects: int
    ) -> Sent | NodeFailure:
        with self.lock:
            server = self.topology.master(address)
        commands = with_asking(_ack.commands(request, self.ack), asking)
        sent = server.send(server.waits if blocking else server.short, commands, packed)
        if isinstance(sent, NodeFailure):
            return self.down(server, sent)
        sent.asking, sent.redirects = asking, redirects
        return sent

    def step(self, request: Args, sent: Sent, deadline: float, allowed: float) -> object:
        """The answer (a NodeFailure when it failed), or the Sent to read next: the same
        request on a fresh connection, or redirected to another master."""
        got = sent.server.read(sent, deadline, allowed)
        if isinstance(got, Sent):
            return got
        if isinstance(got, NodeFailure):
            return self.down(sent.server, got)
        replies = got[1:] if sent.asking else got  # ASKING's OK is not the request's
        to = redirect(replies[0]) if replies else None
        if to is None:
            return answer(self.name, request, replies, self.ack, via=f"master {sent.server.name}: ")
        with self.lock:
            address = self.topology.follow(to, sent.redirects)
        if address is None:
            return NodeFailure(self.name, f"more than {MAX_REDIRECTS} redirects for {key_of(request)!r}")
        blocking = sent.idle is sent.server.waits
        return self.send_to(address, request, blocking, {}, asking=to.ask, redirects=sent.redirects + 1)

    def down(self, server: Server, failure: NodeFailure) -> NodeFailure:
        """A master that does not answer is forgotten, and with it the slot map: the next call
        finds out whether it failed over."""
        with self.lock:
            forgotten = self.topology.forget_master(server.name)
        if forgotten is not None:
            forgotten.close()
        return type(failure)(self.name, f"master {server.name}: {failure.reason}")  # a refusal's kind kept

    def master_of(self, resource: str, deadline: float) -> str | NodeFailure:
        """The master serving `resource`, reading the slot map first if it is not known."""
        with self.lock:
            known = self.topology.known_master_of(resource)
            if known is not None:
                return known
            slots = self.read_slots(deadline)
            if isinstance(slots, NodeFailure):
                return slots
            address = self.topology.learn(slots, resource)
        return address or NodeFailure(self.name, f"the slot of {resource!r} is not served")

    def read_slots(self, deadline: float) -> SlotMap | NodeFailure:
        """CLUSTER SLOTS from the first server that answers: the masters known so far, then the
        seed; each given the per-node timeout, all by `deadline`."""
        reasons = []
        for address in self.topology.to_ask_for_slots():
            try:
                return self.slots_from(address, min(deadline, time.monotonic() + self.timeout))
            except ValueError as e:
                reasons.append(f"{address}: {e}")
        return NodeFailure(self.name, f"cannot read the slot map ({'; '.join(reasons)})")

    def slots_from(self, address: str, deadline: float) -> SlotMap:
        """The slot map as the server at `address` sees it; ValueError saying why not."""
        server = self.topology.master(address)
        got: object = server.send(server.short, (CLUSTER_SLOTS,), {})
        while isinstance(got, Sent):  # at most twice: a stale connection is replaced once
            got = server.read(got, deadline, self.timeout)
        if isinstance(got, NodeFailure):
            raise ValueError(got.reason)
        reply = got[0] if isinstance(got, list) else got
        if isinstance(reply, Exception):
            raise ValueError(reason(reply))
        return SlotMap.parse(reply, host_of(address))

    def close(self) -> None:
        with self.lock:
            masters, self.topology.masters = list(self.topology.masters.values()), {}
        for server in masters:
            server.close()


def cluster_master_pool(
    seed: ends.Seed, master: str, timeout: float, security: Security, identity: Identity
) -> ConnectionPool:
    checked = {"redis_connect_func": identified(identity)}
    kwargs = {**ends.cluster_master_kwargs(seed, master, security), **base(timeout), **checked}
    if seed.tls:
        return ConnectionPool(connection_class=TLSConnection, **kwargs, **tls(security))
    return ConnectionPool(connection_class=PlainConnection, **kwargs)
