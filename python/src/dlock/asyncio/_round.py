"""The Redlock rounds for one lock over the asyncio transport: the async twin of
dlock/_sync_round.py (same decisions, from dlock/_verdicts.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from .. import _commands as cmd
from .._options import Options
from .._timing import quorum, validity
from .._verdicts import (
    EXPIRED,
    AttemptFailed,
    Count,
    Grant,
    Tally,
    commit_verdict,
    fence_failures,
    majority_token,
    nodes_worth_asking_again,
    vote,
)
from ._nodes import Nodes


class Rounds:
    """What a manager and its locks share: the nodes and the options."""

    def __init__(self, nodes: Nodes, opts: Options) -> None:
        self.nodes = nodes
        self.opts = opts

    def size(self) -> int:
        return len(self.nodes)

    async def acquire(self, resource: str, owner: str, ttl_ms: int) -> Grant:
        """One attempt on all nodes; on failure (or cancellation) everything granted is released."""
        started = time.monotonic()
        request = cmd.acquire(resource, owner, ttl_ms)
        names = self.nodes.names
        try:
            votes = [vote(names[n], r) for n, r in enumerate(await self.nodes.everywhere(request))]
            again = nodes_worth_asking_again(votes)
            if again:
                for node, reply in zip(again, await self.nodes.fan_out([(n, request) for n in again]), strict=False):
                    votes[node] = vote(names[node], reply)
            return await self._conclude(resource, owner, ttl_ms, started, Count.of(votes))
        except BaseException:
            await release_shielded(self, resource, owner)
            raise

    async def _conclude(self, resource: str, owner: str, ttl_ms: int, started: float, count: Count) -> Grant:
        token = majority_token(self.size(), count)
        if self.opts.fencing and self.size() > 1:
            if validity(ttl_ms, started, time.monotonic(), self.opts) is None:
                raise AttemptFailed(EXPIRED)
            fence = cmd.fence(resource, owner, token)
            replies = await self.nodes.fan_out([(n, fence) for n, _ in count.grants])
            refused = fence_failures(self.nodes.names, count.grants, replies)
            valid = validity(ttl_ms, started, time.monotonic(), self.opts) is not None
            commit_verdict(self.size(), count, refused, valid)
        now = time.monotonic()
        left = validity(ttl_ms, started, now, self.opts)
        if left is None:
            raise AttemptFailed(EXPIRED)
        return Grant(token, now + left)

    async def release(self, resource: str, owner: str) -> Tally:
        return Tally.of(await self.nodes.everywhere(cmd.release(resource, owner)))

    async def release_on(self, resource: str, owner: str, nodes: list[int]) -> None:
        release = cmd.release(resource, owner)
        await self.nodes.fan_out([(n, release) for n in nodes])

    async def extend(self, resource: str, owner: str, ttl_ms: int) -> float | Tally:
        started = time.monotonic()
        tally = Tally.of(await self.nodes.everywhere(cmd.extend(resource, owner, ttl_ms)))
        now = time.monotonic()
        left = validity(ttl_ms, started, now, self.opts)
        if left is not None and tally.done >= quorum(self.size()):
            return now + left
        return tally


_background: set[asyncio.Future[Any]] = set()

T = TypeVar("T")


def in_background(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Runs `coro` to its end even if the caller is cancelled (a reference is kept so the task is
    not collected midway)."""
    task = asyncio.ensure_future(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


async def release_shielded(rounds: Rounds, resource: str, owner: str, nodes: list[int] | None = None) -> None:
    """RELEASE that a cancellation of the caller cannot stop halfway: a cancelled lock() or
    `async with` still leaves nothing on the nodes."""
    everywhere = list(range(rounds.size())) if nodes is None else nodes
    task = in_background(rounds.release_on(resource, owner, everywhere))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task  # cancelled again while releasing: still finish (bounded by the timeout)
        raise
