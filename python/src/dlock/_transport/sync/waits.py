"""Server-side waits in flight for one sync attempt (the twin of _transport/aio/waits.py, with the same
methods), read as they answer: the requests go out from the caller's thread and one selector
watches their connections, so no wait needs a thread of its own (starting one can take
milliseconds under the GIL, and a grant would sit unread that long). Each wait has a connection
of its own: it blocks on the node until granted or withdrawn.

redis-py keeps a connection's socket in `Connection._sock` (every version from 2 to 8); it is the
only private attribute the client reads."""

from __future__ import annotations

import selectors
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..._pure.commands import Args
from ..._pure.replies import NodeTimeout
from ...errors import NodeFailure
from .nodes import Nodes
from .server import Sent


@dataclass
class Pending:
    """One wait sent and not answered yet."""

    node: int
    round: int
    request: Args
    sent: Sent  # where it went (a redirect or a stale connection replaces it)
    expires: float  # monotonic: given up on then (the wait's own deadline plus the per-node timeout)
    allowed: float  # how long it was given, for the message


Answer = tuple[Pending, object]  # the wait and its reply (a NodeFailure when it failed)


class Waits:
    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes
        self.selector = selectors.DefaultSelector()

    def send(self, node: int, round_: int, request: Args, allowed: float) -> NodeFailure | None:
        """Sends a wait, given `allowed` seconds (plus its acknowledgement's); the failure if it
        could not be sent."""
        allowed = self.nodes.allowed(node, request, allowed)
        expires = time.monotonic() + allowed
        sent = self.nodes.send(node, request, True, {}, expires)
        if isinstance(sent, NodeFailure):
            return sent
        return self.watch(Pending(node, round_, request, sent, expires, allowed))

    def watch(self, pending: Pending) -> NodeFailure | None:
        socket = getattr(pending.sent.connection, "_sock", None)
        if socket is None:  # not after a successful send; only if redis-py renamed it
            pending.sent.connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            return NodeFailure(self.nodes.names[pending.node], "redis-py connection without a socket (_sock)")
        self.selector.register(socket, selectors.EVENT_READ, pending)
        return None

    def __bool__(self) -> bool:
        return bool(self.selector.get_map())

    def answers(self, timeout: float) -> list[Answer]:
        """The replies that come within `timeout` (all those ready once one is), and the waits
        that ran out of time (as NodeTimeout)."""
        if not self:
            time.sleep(max(0.0, timeout))  # nothing in flight: only time can pass
            return []
        ready = self.selector.select(max(0.0, timeout))
        answers = [answer for key, _ in ready if (answer := self.read(key)) is not None]
        return answers + self.expired()

    def read(self, key: selectors.SelectorKey) -> Answer | None:
        """The wait's answer; None when it went on elsewhere (redirected, or repeated on a fresh
        connection) and is watched again. Its acknowledgement, written with it, is read at once."""
        pending: Pending = key.data
        self.selector.unregister(key.fileobj)
        member = self.nodes.members[pending.node]
        reply = member.step(pending.request, pending.sent, pending.expires, pending.allowed)
        if isinstance(reply, Sent):
            pending.sent = reply
            failure = self.watch(pending)
            return None if failure is None else (pending, failure)
        return pending, reply

    def expired(self) -> list[Answer]:
        now = time.monotonic()
        late = [key for key in self.selector.get_map().values() if key.data.expires <= now]
        answers: list[Answer] = []
        for key in late:
            pending: Pending = key.data
            self.selector.unregister(key.fileobj)
            pending.sent.connection.disconnect()  # type: ignore[no-untyped-call, unused-ignore]
            why = f"timed out after {pending.allowed * 1000:.0f}ms"
            answers.append((pending, NodeTimeout(self.nodes.names[pending.node], why)))
        return answers

    def drain_later(self, on_answer: Callable[[Answer], None]) -> None:
        """Hands the waits still out to a thread that follows each to its end (or expiry)."""
        for answer in self.answers(0.0):  # what is in already needs no thread
            on_answer(answer)
        if not self:
            self.selector.close()
            return
        threading.Thread(target=self._drain, args=(on_answer,), daemon=True).start()

    def _drain(self, on_answer: Callable[[Answer], None]) -> None:
        while self:
            soonest = min(key.data.expires for key in self.selector.get_map().values())
            for answer in self.answers(min(1.0, soonest - time.monotonic())):
                on_answer(answer)
        self.selector.close()
