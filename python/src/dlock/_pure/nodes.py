"""The quorum nodes (client/src/transport/nodes.rs) as both transports hold them
(_transport/sync/nodes.py, _transport/aio/nodes.py): in the order given, each a plain master, a
whole Redis Cluster or a sentinel-managed master, with its replica acknowledgement and its
identity (which servers it reaches: _pure/identity.py). The transports add only the talking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from . import ack as _ack
from .commands import Args
from .connect import Security
from .identity import Identity, Registry
from .options import Options
from .urls import Endpoint, Seed


class Acknowledging(Protocol):
    """What every quorum node has, whatever the transport."""

    name: str
    ack: _ack.Ack | None


M = TypeVar("M", bound=Acknowledging)

#: A transport's class of quorum node: (endpoint, timeout, security, acknowledgement, identity)
#: -> node.
Kind = Callable[..., M]


class QuorumNodes(Generic[M]):
    def __init__(
        self, endpoints: Sequence[Endpoint], opts: Options, security: Security, kinds: tuple[Kind[M], Kind[M]]
    ) -> None:
        """`kinds`: the transport's (master, cluster) node classes; a Seed is a cluster's."""
        master, cluster = kinds
        self.timeout = opts.timeout
        self.names = [e.name for e in endpoints]
        self.registry = Registry(self.names)  # one server never counts twice
        self.members: list[M] = []
        for i, e in enumerate(endpoints):  # each with its replica acknowledgement
            ack = _ack.for_node(opts.replica_ack, opts.ack_timeout, e.replicated)
            kind = cluster if isinstance(e, Seed) else master
            self.members.append(kind(e, opts.timeout, security, ack, Identity(self.registry, i)))

    @property
    def call_bound(self) -> float:
        """What one call that does not wait on the server may take, acknowledgement included."""
        return _ack.call_bound(self.timeout, [target.ack for target in self.members])

    def __len__(self) -> int:
        return len(self.members)

    def refusal(self) -> str | None:
        """Why every acquisition is refused: two nodes reach one server (None while no such pair
        was found)."""
        return self.registry.refusal()

    def allowed(self, node: int, request: Args, timeout: float) -> float:
        """How long a call may take: `timeout`, plus the replica acknowledgement's time."""
        return timeout + _ack.extra_time(request, self.members[node].ack)
