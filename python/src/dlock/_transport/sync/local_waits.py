"""Many local waiters, few server waits, for threads: see dlock/_transport/aio/local_waits.py."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class LocalWaits:
    """The resources a manager waits for on the nodes, each with its queue of local callers (the
    head has the turn)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._queues: dict[str, deque[threading.Event]] = {}

    @contextmanager
    def turn(self, resource: str, within: float) -> Iterator[bool]:
        """Waits up to `within` seconds for `resource`'s turn; yields whether it came. Leaving
        hands the turn to the next caller."""
        mine = threading.Event()
        with self._guard:
            queue = self._queues.setdefault(resource, deque())
            queue.append(mine)
            if len(queue) == 1:
                mine.set()
        try:
            yield mine.wait(max(0.0, within))
        finally:
            with self._guard:
                head = queue[0] is mine
                queue.remove(mine)
                if head and queue:
                    queue[0].set()
                if not queue:
                    del self._queues[resource]
