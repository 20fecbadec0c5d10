"""Server-side waits in flight for one asyncio attempt (the twin of dlock/_transport/sync/waits.py, with the
same methods): each wait is a task on a connection of its own (from the node's wait client), its
reply queued for the attempt, which reads them as they come. A wait cancelled or timed out closes
its connection (redis-py does), so the node drops the waiter at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..._pure.commands import Args
from ...errors import NodeFailure
from .concurrency import in_background
from .nodes import Nodes


@dataclass(frozen=True)
class Pending:
    """One wait sent and not answered yet."""

    node: int
    round: int


Answer = tuple[Pending, object]  # the wait and its reply (a NodeFailure when it failed)


class Waits:
    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes
        self.answered: asyncio.Queue[Answer] = asyncio.Queue()
        self.late: Callable[[Answer], Awaitable[None]] | None = None  # set once the attempt is over

    def send(self, node: int, round_: int, request: Args, allowed: float) -> NodeFailure | None:
        """Starts a wait, given `allowed` seconds (plus its acknowledgement's). Always None: a
        wait that cannot be sent answers with its failure, as any other."""
        in_background(self.wait(Pending(node, round_), request, allowed))
        return None

    async def wait(self, pending: Pending, request: Args, allowed: float) -> None:
        reply = await self.nodes.call_blocking(pending.node, request, allowed)
        if self.late is None:
            self.answered.put_nowait((pending, reply))
        else:
            await self.late((pending, reply))

    async def answers(self, timeout: float) -> list[Answer]:
        """The replies that come within `timeout` (all those in once one is)."""
        answers: list[Answer] = []
        if self.answered.empty():
            try:
                answers.append(await asyncio.wait_for(self.answered.get(), max(0.0, timeout)))
            except asyncio.TimeoutError:
                return []
        while not self.answered.empty():
            answers.append(self.answered.get_nowait())
        return answers

    async def drain_later(self, on_answer: Callable[[Answer], Awaitable[None]]) -> None:
        """The attempt is over: the replies in go to `on_answer` now, those of the waits still
        out when they come (in their tasks)."""
        self.late = on_answer
        while not self.answered.empty():
            await on_answer(self.answered.get_nowait())
