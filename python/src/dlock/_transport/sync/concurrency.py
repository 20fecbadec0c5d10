"""The sync side of the small interface between the logic written once (manager, lock, rounds,
queue; generated here from dlock/asyncio/ by python/tools/unasync.py) and each flavour's way of
running things: the names of dlock/_transport/aio/concurrency.py, for threads."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

sleep = time.sleep

#: A lock taken with `with` (the asyncio side's is an asyncio.Lock): a lease's writes, which go
#: one at a time (Lock._writes).
Mutex = threading.Lock


def shielded(result: T) -> T:
    """Where the asyncio flavour awaits work that a cancellation must not cut short (a RELEASE
    that must go out), the sync call has already run to its end: `result` is its result."""
    return result


def within(result: T, seconds: float) -> T | None:
    """Where the asyncio flavour races work against a deadline (an extension against the renew
    deadline), the sync call has already run to its end, bounded by the per-node timeout: the
    caller tells a late result by the clock."""
    return result


class Flight(Generic[T]):
    """One piece of work shared by every caller that comes while it runs (single flight: a lock's
    commit, paid once whoever reads the token): callers from other threads wait until it has
    ended, then run it in turn, which finds what the first run left (a remembered outcome)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def run(self, work: Callable[[], T]) -> T:
        with self.lock:
            return work()


class Worker:
    """`work(worker)` in a daemon thread of its own (the lock's watchdog)."""

    def __init__(self, work: Callable[[Worker], None], name: str) -> None:
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=work, args=(self,), name=name, daemon=True)
        self.thread.start()

    def pause(self, seconds: float) -> bool:
        """Waits `seconds`; True if stop() was called meanwhile (the work should then return)."""
        return self.stopping.wait(seconds)

    def stop(self) -> None:
        """Asks the work to end and waits until it has (unless called from the work itself)."""
        self.stopping.set()
        if threading.current_thread() is not self.thread:
            self.thread.join()

    def cancel(self) -> None:
        """As stop(): a thread cannot be cut short, and here the caller can wait."""
        self.stop()

    def abandon(self) -> None:
        """Asks the work to end without waiting for it (a thread blocked in a call on a node
        ends once the call does: an observer closed by its reader)."""
        self.stopping.set()


class Inbox(Generic[T]):
    """Items put by worker threads, read in order by one reader (an observer's node reports)."""

    def __init__(self) -> None:
        self.queue: queue.Queue[T] = queue.Queue()

    def put(self, item: T) -> None:
        self.queue.put(item)

    def get(self, within: float | None = None) -> T | None:
        """The next item; None if none comes within `within` seconds (None: wait for one)."""
        try:
            return self.queue.get(timeout=within)
        except queue.Empty:
            return None
