"""Many local waiters, few server waits (docs/waiting.md): a queued lock() waits on the nodes on a
connection of its own, so a thousand tasks of one process waiting for one resource would hold a
thousand blocked connections on every node. A manager keeps at most one server-side wait per
resource; its other callers queue here, first come first served, and each takes its turn on the
nodes when the one before it is granted or gives up (the turn covers the wait, never the hold).
dlock/_transport/sync/local_waits.py is the threads' twin."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class LocalWaits:
    """The resources a manager waits for on the nodes, each with its queue of local callers (the
    head has the turn)."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[asyncio.Future[None]]] = {}

    @asynccontextmanager
    async def turn(self, resource: str, within: float) -> AsyncIterator[bool]:
        """Waits up to `within` seconds for `resource`'s turn; yields whether it came. Leaving
        hands the turn to the next caller (a cancelled caller leaves too)."""
        queue = self._queues.setdefault(resource, deque())
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(mine)
        if len(queue) == 1:
            mine.set_result(None)
        try:
            await asyncio.wait({mine}, timeout=max(0.0, within))  # never cancels `mine`
            yield mine.done()
        finally:
            head = queue[0] is mine
            queue.remove(mine)
            if head and queue:
                queue[0].set_result(None)
            if not queue:
                del self._queues[resource]
