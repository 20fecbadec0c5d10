# Generated from src/dlock/_async/calls.py by python/tools/unasync.py: do not edit. Edit that file,
# then run `python tools/unasync.py` in python/ (`make python-test` checks it is up to date).
"""The calls to the nodes about a lock (client/src/calls.rs), the one set every path uses: an
attempt's plain asks and commits (driver.py; its server-side waits go through the transport's
Waits), a lock's extensions, renewal and release (lock.py), the by-owner calls (manager.py).
Each reply is read here into what the caller decides on: an ask's token, nil or failure, a
commit's yes or why not, a Tally."""

from __future__ import annotations

import time

from .._pure import commands as cmd
from .._pure.commands import Resource
from .._pure.kind import Kind
from .._pure.timing import validity
from .._pure.verdicts import Tally, ask_reply
from ..errors import NodeFailure
from .backend import Backend


class Calls:
    """The calls to the nodes of `backend` (what a manager and its locks share)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def ask(self, resource: Resource, owner: str, ttl_ms: int, kind: Kind, nodes: list[int]) -> list[object]:
        """DLOCK.ACQUIRE (no server wait) on `nodes` at once: each one's token, None (held by
        another) or NodeFailure."""
        request = cmd.acquire(resource, owner, ttl_ms, kind)
        replies = self.backend.nodes.fan_out([(n, request) for n in nodes])
        return [ask_reply(self.backend.nodes.names[n], r) for n, r in zip(nodes, replies, strict=True)]

    def fence(
        self, resource: Resource, owner: str, token: int, ttl_ms: int | None, nodes: list[int]
    ) -> list[NodeFailure | None]:
        """DLOCK.FENCE of `token` on `nodes` (with PX ttl when the commit starts the lease): each
        one's None (committed) or why not."""
        fence = cmd.fence(resource, owner, token, ttl_ms)
        replies = self.backend.nodes.fan_out([(n, fence) for n in nodes])
        refused = "fence refused: lock no longer held"
        return [
            r if isinstance(r, NodeFailure) else None if r == 1 else NodeFailure(self.backend.nodes.names[n], refused)
            for n, r in zip(nodes, replies, strict=True)
        ]

    def renew(self, node: int, resource: Resource, owner: str, ttl_ms: int) -> bool:
        """DLOCK.EXTEND on one node (the renewal of a lock held on one node): whether it did."""
        replies = self.backend.nodes.fan_out([(node, cmd.extend(resource, owner, ttl_ms))])
        return replies[0] == 1

    def release(self, resource: Resource, owner: str) -> Tally:
        """RELEASE on every node (a grant whose reply was lost is still a grant)."""
        return Tally.of(self.backend.nodes.everywhere(cmd.release(resource, owner)))

    def release_on(self, resource: Resource, owner: str, nodes: list[int]) -> list[object]:
        """RELEASE on these nodes (a round's grants and waits, or a stale grant): the replies."""
        release = cmd.release(resource, owner)
        return self.backend.nodes.fan_out([(n, release) for n in nodes])

    def proclaim(self, resource: str, owner: str, token: int, new_owner: str) -> Tally:
        """DLOCK.PROCLAIM on every node: `owner`'s lock (with `token`) held as `new_owner` from now."""
        return Tally.of(self.backend.nodes.everywhere(cmd.proclaim(resource, owner, token, new_owner)))

    def extend(
        self, resource: Resource, owner: str, ttl_ms: int, needed: int, timeout: float | None = None
    ) -> float | Tally:
        """The new deadline if `needed` nodes extended within the new validity, else the tally.
        `timeout` bounds each node's call (default: the per-node timeout)."""
        started = time.monotonic()
        tally = Tally.of(self.backend.nodes.everywhere(cmd.extend(resource, owner, ttl_ms), timeout))
        now = time.monotonic()
        left = validity(ttl_ms, started, now, self.backend.opts)
        if left is not None and tally.done >= needed:
            return now + left
        return tally
