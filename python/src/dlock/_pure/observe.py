"""Each node's hot locks through DLOCK.TOP (client/src/observe.rs): keys with waiters, and held
locks over the keyspace walked in bounded steps. Pure: the managers of both flavours drive a
`Walk` with their own fan-out."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import NodeFailure
from . import commands as cmd
from .admin import text
from .commands import Args

#: Keys one DLOCK.TOP step asks a node to scan: about a millisecond of its time (docs/bench/top.md).
STEP = 1000
#: Steps per node and call: a keyspace beyond about a million keys is shown in part.
MAX_STEPS = 1000


@dataclass(frozen=True)
class TopHolder:
    owner: str
    token: int
    ttl_ms: int


@dataclass(frozen=True)
class QueuedLock:
    """A lock clients wait for: `holder` None while free (a handoff is due)."""

    resource: str
    waiters: int
    oldest_wait_ms: int
    holder: TopHolder | None


@dataclass(frozen=True)
class HeldLock:
    """One holder of a held lock (a shared lock or a semaphore has one per holder)."""

    resource: str
    holder: TopHolder
    holds: int
    waiters: int
    #: "exclusive", "shared" or "permit".
    mode: str = "exclusive"


@dataclass
class NodeTop:
    """One node's hot locks, or why it could not say (`failure`)."""

    node: str
    #: Longest queue first, then oldest waiter.
    waiting: list[QueuedLock] = field(default_factory=list)
    #: Most waiters first, then by name; at most the rows asked for.
    held: list[HeldLock] = field(default_factory=list)
    #: Held locks found, before the cut to the rows asked for.
    held_total: int = 0
    #: False when the walk stopped at MAX_STEPS before the end of the keyspace.
    complete: bool = False
    failure: str | None = None


def check_rows(rows: object) -> int:
    if not isinstance(rows, int) or isinstance(rows, bool) or not 1 <= rows <= 1000:
        raise ValueError(f"rows must be an integer from 1 to 1000, got {rows!r}")
    return rows


class Walk:
    """One `top()` call: every node's cursor walked in lock-step rounds of DLOCK.TOP."""

    def __init__(self, nodes: list[str], rows: int) -> None:
        self.rows = rows
        self.tops = [NodeTop(name) for name in nodes]
        self.cursors: dict[int, int] = {}
        for n, top in enumerate(self.tops):
            if "+cluster://" in top.node:
                top.failure = "a cluster: give each master as a redis:// URL to see its locks"
            else:
                self.cursors[n] = 0
        self.steps = 0

    def requests(self) -> list[tuple[int, Args]]:
        """The next round's calls; none once every walk ended."""
        if self.steps >= MAX_STEPS:
            return []
        self.steps += 1
        return [(n, cmd.top(cursor, STEP)) for n, cursor in self.cursors.items()]

    def take(self, calls: list[tuple[int, Args]], replies: list[object]) -> None:
        for (n, _), reply in zip(calls, replies, strict=True):
            top = self.tops[n]
            try:
                if isinstance(reply, NodeFailure):
                    raise ValueError(reply.reason)
                cursor = self.add(top, reply, first=self.cursors[n] == 0)
            except (ValueError, TypeError, IndexError) as e:
                top.failure = str(e)
                del self.cursors[n]
                continue
            if cursor == 0:
                top.complete = True
                del self.cursors[n]
            else:
                self.cursors[n] = cursor

    def add(self, top: NodeTop, reply: object, first: bool) -> int:
        """One step's rows into `top`; the next cursor."""
        fields = pairs(reply)
        if first:
            top.waiting = [queued(row) for row in rows(fields.get("waiting"))][: self.rows]
        top.held.extend(held(row) for row in rows(fields.get("held")))
        return int(text(fields.get("cursor")))

    def result(self) -> list[NodeTop]:
        for top in self.tops:
            top.held.sort(key=lambda h: (-h.waiters, h.resource))
            top.held_total = len(top.held)
            del top.held[self.rows :]
        return self.tops


def pairs(reply: object) -> dict[str, object]:
    if isinstance(reply, dict):
        return {text(k): v for k, v in reply.items()}
    if isinstance(reply, list) and len(reply) % 2 == 0:
        return {text(k): v for k, v in zip(reply[::2], reply[1::2], strict=True)}
    raise ValueError(f"unexpected DLOCK.TOP reply {reply!r}")


def rows(value: object) -> list[list[object]]:
    if not isinstance(value, list) or not all(isinstance(row, list) and len(row) >= 6 for row in value):
        raise ValueError(f"unexpected DLOCK.TOP rows {value!r}")
    return value


def integer(value: object) -> int:
    return value if isinstance(value, int) else int(text(value))


def queued(row: list[object]) -> QueuedLock:
    """[key, waiters, oldest-wait-ms, owner|nil, token|nil, ttl|nil]"""
    holder = None if row[3] is None else TopHolder(text(row[3]), integer(row[4]), integer(row[5]))
    return QueuedLock(text(row[0]), integer(row[1]), integer(row[2]), holder)


def held(row: list[object]) -> HeldLock:
    """[key, owner, token, ttl, holds, waiters, mode] (no mode from a module without shared locks)"""
    holder = TopHolder(text(row[1]), integer(row[2]), integer(row[3]))
    mode = text(row[6]) if len(row) > 6 else "exclusive"
    return HeldLock(text(row[0]), holder, integer(row[4]), integer(row[5]), mode)
