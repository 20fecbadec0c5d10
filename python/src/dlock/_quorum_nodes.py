"""The quorum nodes as both transports hold them (_sync_nodes.py, asyncio/_nodes.py): in the
order given, each a plain master or a whole Redis Cluster with its replica acknowledgement.
The transports add only the talking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from . import _ack
from ._cluster import is_cluster_url
from ._commands import Args
from ._options import Options


class Acknowledging(Protocol):
    """What every quorum node has, whatever the transport."""

    name: str
    ack: _ack.Ack | None


M = TypeVar("M", bound=Acknowledging)

#: How a transport makes a quorum node: (url, per-node timeout, acknowledgement) -> node.
Make = Callable[[str, float, _ack.Ack | None], M]


class QuorumNodes(Generic[M]):
    def __init__(self, urls: Sequence[str], opts: Options, master: Make[M], cluster: Make[M]) -> None:
        self.timeout = opts.timeout
        self.names = list(urls)
        self.members: list[M] = []
        for url in urls:  # each with its replica acknowledgement
            in_cluster = is_cluster_url(url)
            ack = _ack.for_node(opts.replica_ack, opts.ack_timeout, in_cluster)
            self.members.append((cluster if in_cluster else master)(url, opts.timeout, ack))

    @property
    def call_bound(self) -> float:
        """What one call that does not wait on the server may take, acknowledgement included."""
        return _ack.call_bound(self.timeout, [target.ack for target in self.members])

    def __len__(self) -> int:
        return len(self.members)

    def allowed(self, node: int, request: Args, timeout: float) -> float:
        """How long a call may take: `timeout`, plus the replica acknowledgement's time."""
        return timeout + _ack.extra_time(request, self.members[node].ack)
