"""What a manager and the locks it hands out share (client/src/backend.rs): the quorum nodes (the
transport) and the options. The calls about a lock (calls.py) go through it."""

from __future__ import annotations

from .._pure.kind import Kind
from .._pure.options import Options
from .._transport.aio.nodes import Nodes


class Backend:
    """The nodes and the options, one per manager, shared by its locks."""

    def __init__(self, nodes: Nodes, opts: Options) -> None:
        self.nodes = nodes
        self.opts = opts

    def size(self) -> int:
        return len(self.nodes)

    def needed(self, kind: Kind) -> int:
        """How many of the nodes make a quorum for a hold of `kind`."""
        return kind.quorum(self.size())
