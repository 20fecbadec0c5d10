"""The Redlock rounds for one lock (client/src/round.rs): parallel fan-out, quorum (a majority,
more for a semaphore: the acquisition's Kind says), validity, and the two-phase quorum fencing
commit; the decisions are dlock/_verdicts.py's."""

from __future__ import annotations

import time

from .._pure import commands as cmd
from .._pure.kind import Kind
from .._pure.options import Options
from .._pure.timing import validity
from .._pure.verdicts import (
    EXPIRED,
    REFUSED,
    AttemptFailed,
    Count,
    Grant,
    Tally,
    commit_verdict,
    fence_failures,
    majority_token,
    nodes_worth_asking_again,
    refusal,
    vote,
)
from .._transport.aio.concurrency import shielded
from .._transport.aio.nodes import Nodes


class Rounds:
    """What a manager and its locks share: the nodes and the options."""

    def __init__(self, nodes: Nodes, opts: Options) -> None:
        self.nodes = nodes
        self.opts = opts

    def size(self) -> int:
        return len(self.nodes)

    def needed(self, kind: Kind) -> int:
        """How many of the nodes make a quorum for a hold of `kind`."""
        return kind.quorum(self.size())

    async def acquire(self, resource: str, owner: str, ttl_ms: int, kind: Kind) -> Grant:
        """One attempt on all nodes; on failure (or an interruption) everything granted is
        released. A node refusing the kind ends it at once (AttemptFailed REFUSED)."""
        started = time.monotonic()
        request = cmd.acquire(resource, owner, ttl_ms, kind.option())
        names, needed = self.nodes.names, self.needed(kind)
        try:
            replies = await self.nodes.everywhere(request)
            votes = [vote(names[n], r) for n, r in enumerate(replies)]
            again = [] if refusal(votes) else nodes_worth_asking_again(votes, needed)
            if again:
                replies = await self.nodes.fan_out([(n, request) for n in again])
                for node, reply in zip(again, replies, strict=False):
                    votes[node] = vote(names[node], reply)
            refused = refusal(votes)
            if refused is not None:
                raise AttemptFailed(REFUSED, [refused])
            return await self._conclude(resource, owner, ttl_ms, started, needed, Count.of(votes))
        except BaseException:
            await shielded(self.release(resource, owner))
            raise

    async def _conclude(self, resource: str, owner: str, ttl_ms: int, since: float, needed: int, count: Count) -> Grant:
        """Phase 1's verdict, then (with fencing and more than one node) phase 2, then validity
        counted from `since` (when the attempt started)."""
        token = majority_token(self.size(), needed, count)
        if self.opts.fencing and self.size() > 1:
            if validity(ttl_ms, since, time.monotonic(), self.opts) is None:
                raise AttemptFailed(EXPIRED)
            fence = cmd.fence(resource, owner, token)
            replies = await self.nodes.fan_out([(n, fence) for n, _ in count.grants])
            refused = fence_failures(self.nodes.names, count.grants, replies)
            valid = validity(ttl_ms, since, time.monotonic(), self.opts) is not None
            commit_verdict(needed, count, refused, valid)
        now = time.monotonic()
        left = validity(ttl_ms, since, now, self.opts)
        if left is None:
            raise AttemptFailed(EXPIRED)
        return Grant(token, now + left)

    async def release(self, resource: str, owner: str) -> Tally:
        """RELEASE on every node (a grant whose reply was lost is still a grant)."""
        return Tally.of(await self.nodes.everywhere(cmd.release(resource, owner)))

    async def release_on(self, resource: str, owner: str, nodes: list[int]) -> None:
        """RELEASE on these nodes (a round's grants, or a stale one)."""
        release = cmd.release(resource, owner)
        await self.nodes.fan_out([(n, release) for n in nodes])

    async def extend(self, resource: str, owner: str, ttl_ms: int, needed: int) -> float | Tally:
        """The new deadline if `needed` nodes extended within the new validity, else the tally."""
        started = time.monotonic()
        tally = Tally.of(await self.nodes.everywhere(cmd.extend(resource, owner, ttl_ms)))
        now = time.monotonic()
        left = validity(ttl_ms, started, now, self.opts)
        if left is not None and tally.done >= needed:
            return now + left
        return tally
