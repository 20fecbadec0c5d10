"""The quorum nodes as both transports hold them (_sync_nodes.py, asyncio/_nodes.py): in the
order given, each a plain master, a whole Redis Cluster or a sentinel-managed master, with its
replica acknowledgement. The transports add only the talking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from . import _ack
from ._commands import Args
from ._endpoints import Endpoint
from ._options import Options


class Acknowledging(Protocol):
    """What every quorum node has, whatever the transport."""

    name: str
    ack: _ack.Ack | None


M = TypeVar("M", bound=Acknowledging)

#: How a transport makes a quorum node: (endpoint, acknowledgement) -> node.
Make = Callable[[Endpoint, _ack.Ack | None], M]


class QuorumNodes(Generic[M]):
    def __init__(self, endpoints: Sequence[Endpoint], opts: Options, make: Make[M]) -> None:
        self.timeout = opts.timeout
        self.names = [e.name for e in endpoints]
        self.members: list[M] = []
        for e in endpoints:  # each with its replica acknowledgement
            self.members.append(make(e, _ack.for_node(opts.replica_ack, opts.ack_timeout, e.replicated)))

    @property
    def call_bound(self) -> float:
        """What one call that does not wait on the server may take, acknowledgement included."""
        return _ack.call_bound(self.timeout, [target.ack for target in self.members])

    def __len__(self) -> int:
        return len(self.members)

    def allowed(self, node: int, request: Args, timeout: float) -> float:
        """How long a call may take: `timeout`, plus the replica acknowledgement's time."""
        return timeout + _ack.extra_time(request, self.members[node].ack)
