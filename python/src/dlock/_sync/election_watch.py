# Generated from src/dlock/_async/election_watch.py by python/tools/unasync.py: do not edit. Edit that file,
# then run `python tools/unasync.py` in python/ (`make python-test` checks it is up to date).
"""Following an election (docs/election.md; the Rust client's election_watch.rs), sync
flavour: each node is asked `DLOCK.OBSERVE name AFTER token OWNER owner`, which it answers
when its holder differs from the one named (or its lease ends), so nobody polls; one thread
per node does, and the reader applies the leader rule (_pure/election.py) to what each node
last said, yielding each change in order."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from types import TracebackType

from .._pure import commands as cmd
from .._pure.ack import TIMEOUT_RESOLUTION
from .._pure.election import UNKNOWN, Leader, Seen, leader_view, seen_holder, split_owner
from .._pure.kind import Kind
from .._pure.timing import retry_pause
from .._transport.sync.concurrency import Inbox, Worker
from ..errors import NodeFailure, NoQuorum, WrongKindError
from .calls import Calls

#: How long (ms) one DLOCK.OBSERVE may block on a node before it is asked again.
OBSERVE_FOR_MS = 30_000

#: One node's report: what it holds, or why it could not say.
Report = tuple[int, Seen | NodeFailure]

#: What an observer yields: the leader, None (nobody leads), or NoQuorum (too few answered).
Change = Leader | NoQuorum | None

#: Who leads, as the nodes tell: a leader, None (nobody), or UNKNOWN (too few answered).
View = Leader | str | None

#: How long (s) a new leader whose epoch no majority shows yet is held back: a grant being
#: committed shows each node's own token for the moment its FENCE takes (a round trip), then
#: the epoch on a majority; with committed nodes down it stays so, and is shown after this.
COMMIT_GRACE = 0.25


class Observer(Iterator[Change]):
    """The changes of who leads one election, in order: the leader (a Leader) when it first
    hears enough nodes, then each change (None: nobody leads, after a resignation or an expiry
    nobody took over; NoQuorum, an item not raised: too few nodes answer to tell). `for change
    in observer`; `close()` (or leaving a `with` block) stops it: each node's thread ends once
    its pending call does (within 30 s)."""

    def __init__(self, calls: Calls, name: str) -> None:
        self._calls = calls
        self._name = name
        nodes = calls.backend.size()
        self._needed = calls.backend.needed(Kind())
        self._inbox: Inbox[Report] = Inbox()
        self._workers: list[Worker] = []  # started with the first read (asyncio: within its loop)
        self._seen: list[Seen | str] = [UNKNOWN] * nodes
        self._failures: list[NodeFailure | None] = [None] * nodes
        self._heard = [False] * nodes
        self._shown: list[View] = []  # the last change yielded, if any
        self._pending: tuple[View, float] | None = None  # held back until (time.monotonic())
        self._closed = False

    def __iter__(self) -> Observer:
        return self

    def __next__(self) -> Change:
        if self._closed:
            raise StopIteration
        if not self._workers:
            self._workers = [
                Worker(functools.partial(self._watch, node), f"dlock-observe-{self._name}-{node}")
                for node in range(self._calls.backend.size())
            ]
        while True:
            due = None if self._pending is None else self._pending[1]
            got = self._inbox.get(None if due is None else max(0.0, due - time.monotonic()))
            if got is None and self._pending is not None:  # its grace ran out: shown as it is
                view, self._pending = self._pending[0], None
                return self._show(view)
            change = None if got is None else self._take(*got)
            if change is not None:
                return change[0]

    def _take(self, node: int, report: Seen | NodeFailure) -> tuple[Change] | None:
        """Keeps what `node` said; the change to yield, if the leader is now another. A new
        leader whose epoch is on fewer than a majority is held back up to COMMIT_GRACE (as the
        Rust observer does): a grant being committed on several masters shows each node's own
        token until its FENCE raises them to the epoch (a round trip), so it would read first
        with a smaller epoch, then the committed one: two changes for one takeover."""
        news = self._news(node, report)
        if news is None:
            self._pending = None  # back to what is shown
            return None
        view = news[0]
        if self._uncommitted(view):  # the deadline is the first pending view's, not pushed back
            due = self._pending[1] if self._pending else time.monotonic() + COMMIT_GRACE
            self._pending = (view, due)
            return None
        self._pending = None
        return (self._show(view),)

    def _news(self, node: int, report: Seen | NodeFailure) -> tuple[View] | None:
        """Keeps what `node` said; the view, if it is not the one shown (None: no news)."""
        self._heard[node] = True
        if isinstance(report, NodeFailure):
            self._seen[node], self._failures[node] = UNKNOWN, report
        else:
            self._seen[node], self._failures[node] = report, None
        view = leader_view(self._seen, self._needed, self._shown_leader())
        # Until every node has answered once, only a leader is sure: a node not heard yet may
        # hold the grant that makes a majority (on several masters a committed leader's other
        # nodes may hold it under their own, uncommitted, tokens).
        undecided = not all(self._heard) and not isinstance(view, Leader)
        if undecided or (self._shown and self._shown[0] == view):
            return None
        return (view,)

    def _shown_leader(self) -> Leader | None:
        shown = self._shown[0] if self._shown else None
        return shown if isinstance(shown, Leader) else None

    def _uncommitted(self, view: View) -> bool:
        """A leader not shown before whose epoch (same id, same token) is on fewer than a
        majority of nodes: its grant may still be being committed."""
        if not isinstance(view, Leader):
            return False
        shown = self._shown_leader()
        on = sum(
            1
            for seen in self._seen
            if isinstance(seen, tuple) and seen[1] == view.epoch and split_owner(seen[0])[0] == view.id
        )
        return (shown is None or shown.id != view.id) and on < self._needed

    def _show(self, view: View) -> Change:
        """Records `view` as shown; the change it yields."""
        self._shown = [view]
        if isinstance(view, str):
            return NoQuorum(self._name, self._needed, [f for f in self._failures if f is not None])
        return view

    def _watch(self, node: int, worker: Worker) -> None:
        """Asks `node` again and again, each time after the holder it last reported."""
        last: Seen | str = UNKNOWN  # nothing heard yet: asked without AFTER, answered at once
        nodes, name = self._calls.backend.nodes, self._name
        blocking = OBSERVE_FOR_MS / 1000 + TIMEOUT_RESOLUTION + self._calls.backend.opts.timeout
        while not worker.pause(0):
            after = None if isinstance(last, str) else (0, "") if last is None else (last[1], last[0])
            # Without AFTER the node answers at once: a frozen one costs the per-node timeout.
            allowed = self._calls.backend.opts.timeout if after is None else blocking
            reply = nodes.call_blocking(node, cmd.observe(name, after, OBSERVE_FOR_MS), allowed)
            try:
                report = seen_holder(name, nodes.names[node], reply)
            except WrongKindError as error:
                report = NodeFailure(nodes.names[node], str(error))
            self._inbox.put((node, report))
            last = UNKNOWN if isinstance(report, NodeFailure) else report
            if isinstance(report, NodeFailure) and worker.pause(retry_pause(self._calls.backend.opts)):
                return

    def close(self) -> None:
        """Stops following: no more changes are read (pending node calls are given up)."""
        self._closed = True
        for worker in self._workers:
            worker.abandon()

    def __enter__(self) -> Observer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
