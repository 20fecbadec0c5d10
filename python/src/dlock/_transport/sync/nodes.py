"""The sync transport: non-blocking requests fan out without threads: every request is written
first, then the replies are read against one deadline, so the nodes work in parallel and a down
or paused node costs at most the per-node timeout (plus the replica acknowledgement's time, when
one is asked). Server-side waits each take a connection of their own (_transport/sync/server.py).

A quorum node is a plain master (`Master`) or a whole Redis Cluster (`Cluster`,
_transport/sync/cluster.py); both write a request, then take one `step` per reply read, which either
answers or says where the request went next (a fresh connection, or a redirect)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import redis

from ..._pure import ack as _ack
from ..._pure.commands import Args
from ..._pure.connect import Security
from ..._pure.identity import Identity
from ..._pure.nodes import QuorumNodes
from ..._pure.options import Options
from ..._pure.replies import NodeTimeout, answer
from ..._pure.urls import Endpoint, SentinelGroup
from ...errors import NodeFailure
from .cluster import Cluster
from .sentinel import sentinel_pool
from .server import Packed, Sent, Server, server_pool

T = TypeVar("T")


class Member(Protocol):
    """One quorum node, as the rounds reach it."""

    name: str
    ack: _ack.Ack | None

    def connected(self, request: Args, blocking: bool) -> bool:
        """Whether `request` can be written at once, on an idle connection (no connecting)."""
        ...

    def send(self, request: Args, blocking: bool, packed: Packed, deadline: float) -> Sent | NodeFailure: ...

    def step(self, request: Args, sent: Sent, deadline: float, allowed: float) -> object: ...

    def close(self) -> None: ...


class Master:
    """A quorum node that is one master: named by a URL, by sentinels, or a ready-made client's."""

    def __init__(
        self, node: Endpoint, timeout: float, security: Security, ack: _ack.Ack | None, identity: Identity
    ) -> None:
        self.name = node.name
        self.ack = ack
        if isinstance(node, SentinelGroup):
            pool = sentinel_pool(node, timeout, security, identity)
        else:
            pool = server_pool(node, timeout, security, identity)
        self.server = Server(node.name, pool)
        self.follows_failovers = node.replicated  # a sentinel-managed master

    def connected(self, request: Args, blocking: bool) -> bool:
        return self.server.has_idle(blocking)

    def send(self, request: Args, blocking: bool, packed: Packed, deadline: float) -> Sent | NodeFailure:
        idle = self.server.waits if blocking else self.server.short
        return self.after(self.server.send(idle, _ack.commands(request, self.ack), packed))

    def step(self, request: Args, sent: Sent, deadline: float, allowed: float) -> object:
        """The answer (a NodeFailure when it failed), or the Sent to read next."""
        got = self.server.read(sent, deadline, allowed)
        if isinstance(got, (Sent, NodeFailure)):
            return self.after(got)
        return self.after(answer(self.name, request, got, self.ack))

    def after(self, outcome: T) -> T:
        """A sentinel-managed master that failed (refused, unreachable, short of acknowledgements:
        maybe no longer the master) is asked for on new connections, from the sentinels. (A call
        that timed out closed its own connection; a wait runs out of time in normal use.)"""
        if self.follows_failovers and isinstance(outcome, NodeFailure) and not isinstance(outcome, NodeTimeout):
            self.server.forget_idle()
        return outcome

    def close(self) -> None:
        self.server.close()


def at_once(items: list[int], work: Callable[[int], None]) -> None:
    """`work(item)` for each item, each in a thread of its own when there are several; the first
    error any raised is raised here once all are done."""
    if len(items) <= 1:
        for item in items:
            work(item)
        return
    errors: list[BaseException] = []

    def run(item: int) -> None:
        try:
            work(item)
        except BaseException as e:  # raised in the caller's thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(item,), daemon=True) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class Nodes(QuorumNodes[Member]):
    #: The ready-made clients this flavour takes as nodes.
    client_type = redis.Redis

    def __init__(self, endpoints: Sequence[Endpoint], opts: Options, security: Security) -> None:
        super().__init__(endpoints, opts, security, (Master, Cluster))

    def fan_out(self, calls: Sequence[tuple[int, Args]], timeout: float | None = None) -> list[object]:
        """Sends each (node, command) and returns the replies in order; a failure is a
        NodeFailure. All within one per-node timeout (or `timeout`) from now (plus
        acknowledgements).

        Requests go first where a connection is at hand, so their replies come while the other
        nodes are connected to; those connect at once, each in a thread of its own when there
        are several: a node that accepts TCP but never finishes a TLS handshake or AUTH (paused,
        overloaded) then costs the others nothing. Connecting is rare (connections are kept)."""
        started = time.monotonic()
        bound = self.timeout if timeout is None else timeout
        allowed = [self.allowed(node, args, bound) for node, args in calls]
        packed: Packed = {}
        sent: list[object] = [None] * len(calls)

        def send(call: int) -> None:
            node, args = calls[call]
            sent[call] = self.send(node, args, False, packed, started + allowed[call])

        at_hand = [self.members[node].connected(args, False) for node, args in calls]
        for call in (call for call, ready in enumerate(at_hand) if ready):
            send(call)
        at_once([call for call, ready in enumerate(at_hand) if not ready], send)
        return [
            self.finish(node, args, out, started + bound, bound)
            for (node, args), out, bound in zip(calls, sent, allowed, strict=True)
        ]

    def send(self, node: int, request: Args, blocking: bool, packed: Packed, deadline: float) -> Sent | NodeFailure:
        """Writes `request` to `node` (connecting first if need be: its server then identified,
        _pure/identity.py). A node found to reach another node's server is never asked again."""
        refused = self.registry.refused(node)
        if refused is not None:
            return NodeFailure(self.names[node], refused)
        try:
            return self.members[node].send(request, blocking, packed, deadline)
        finally:
            self.registry.met(node)  # connected (or not) by now: sending connects first

    def meet_all(self, within: float) -> None:
        """Every node was met by the time its request was written (sending connects first): a
        manager's first lock has nothing to wait for here, unlike the asyncio flavour's."""

    def finish(self, node: int, request: Args, sent: object, deadline: float, allowed: float) -> object:
        """Reads until `request` is answered (fresh connections and redirects followed)."""
        while isinstance(sent, Sent):
            sent = self.members[node].step(request, sent, deadline, allowed)
        return sent

    def everywhere(self, args: Args, timeout: float | None = None) -> list[object]:
        return self.fan_out([(n, args) for n in range(len(self.members))], timeout)

    def call_blocking(self, node: int, args: Args, timeout: float) -> object:
        """A blocking request on a connection of its own, bounded by `timeout` as a whole (plus
        the acknowledgement's time)."""
        allowed = self.allowed(node, args, timeout)
        deadline = time.monotonic() + allowed
        sent = self.send(node, args, True, {}, deadline)
        return self.finish(node, args, sent, deadline, allowed)

    def close(self) -> None:
        for node in self.members:
            node.close()
