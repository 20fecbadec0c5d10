"""Which redis-server a connection reached, so that one server never counts twice in a quorum
(client/src/transport/identity.rs; free of I/O, shared by both transports).

A URL's text does not say which server it reaches: localhost and 127.0.0.1, a sentinel group's
master and the same master given directly, two seeds of one Redis Cluster all name one process.
Counted as two nodes, that one process made a quorum alone (issue 48). So every new connection,
before its first request, reads the server's run_id (DLOCK.RUNID, or INFO server from a module
older than that command: one per process, the same whatever address reached it, new after a
restart) and claims it for its quorum node in the manager's Registry. A server another node
already claimed is refused: the connection fails, the node's calls fail from then on without a
request sent, and every acquisition raises ValueError naming both nodes. A server that cannot say
its run_id (an ACL user without DLOCK.RUNID, or without INFO on an older module) is refused too,
with what to allow: a quorum that cannot be checked is not trusted.

A claim lasts as long as the manager: it moves only when its place (a URL's server, a sentinel
group's master, a cluster master's address) shows another run_id (a restart, or the group's new
master after a failover), and the old one is let go then. A server a node no longer uses (a master
gone from a cluster's slot map) stays claimed, as in every client (docs/connecting.md)."""

from __future__ import annotations

import threading

from .diagnosis import Explained


class Registry:
    """Which quorum node reaches each server, for one manager. Thread-safe (the sync transport
    connects from several threads at once)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._lock = threading.Lock()
        self._owners: dict[str, tuple[int, int]] = {}  # run_id -> (node, servers of it that saw it)
        self._refusal: str | None = None  # the first duplicate found, in words
        self._refused: dict[int, str] = {}  # nodes reaching another node's server
        self._met = [False] * len(names)

    def refusal(self) -> str | None:
        """Why every acquisition is refused: two nodes reach one server."""
        with self._lock:
            return self._refusal

    def refused(self, node: int) -> str | None:
        """Why `node` is refused, if it reaches a server another node reaches."""
        with self._lock:
            return self._refused.get(node)

    def met(self, node: int) -> None:
        """`node` was met: a connection of it identified its server (or was refused), or a call of
        it ended (a node down counts: nothing to identify until it is back)."""
        with self._lock:
            self._met[node] = True

    def all_met(self) -> bool:
        """Whether every node was met once. A manager's first lock may count a node's grant while
        another node that reaches the same server is still connecting: it waits for this first,
        so that first call is the one refused."""
        with self._lock:
            return all(self._met)

    def claim(self, node: int, run_id: str, previous: str | None) -> None:
        """`node` sees `run_id` where it saw `previous` (a restart, another master after a
        failover): the new one claimed and the old let go, unless another node holds it
        (Explained, with both nodes named)."""
        with self._lock:
            owner = self._owners.get(run_id)
            if owner is not None and owner[0] != node:
                why = self._duplicate(owner[0], node, run_id)
                self._refusal = self._refusal or why
                self._refused[node] = why
                raise Explained(why)
            self._owners[run_id] = (node, (owner[1] if owner else 0) + 1)
            if previous is not None:
                self._release(previous)

    def _release(self, run_id: str) -> None:
        owner = self._owners.get(run_id)
        if owner is not None:
            self._owners[run_id] = (owner[0], owner[1] - 1)
            if owner[1] <= 1:
                del self._owners[run_id]

    def _duplicate(self, a: int, b: int, run_id: str) -> str:
        """The refusal's words: both nodes in the order given, whichever connected first."""
        first, second = self.names[min(a, b)], self.names[max(a, b)]
        return f"nodes {first} and {second} are the same server (run_id {run_id}): list each server once"


class Identity:
    """One place in the registry (a plain node's server, a cluster master's address, a sentinel
    group's master whichever server it is): the run_id its connections last showed."""

    def __init__(self, registry: Registry, node: int) -> None:
        self.registry = registry
        self.node = node
        self.seen: str | None = None

    def another(self) -> Identity:
        """The same node's identity for another of its servers (a cluster's other masters)."""
        return Identity(self.registry, self.node)

    def check(self, found: str | None) -> None:
        """Claims the server whose run_id is `found` (read on a connection just made, before any
        request on it; None: its INFO server had none); Explained saying why the connection is
        refused otherwise."""
        try:
            if not found:
                raise Explained("cannot tell which server this is: INFO server has no run_id")
            if found != self.seen:
                self.registry.claim(self.node, found, self.seen)
                self.seen = found
        finally:
            self.registry.met(self.node)


def text(reply: object) -> str:
    """A reply as text (bytes, or already decoded by a ready-made client's connection)."""
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


def run_id(info: object) -> str | None:
    """The run_id field of an INFO server reply (bytes or text)."""
    for line in text(info).splitlines():
        if line.startswith("run_id:"):
            return line[len("run_id:") :].strip() or None
    return None


def unknown_command(said: str) -> bool:
    """Whether `said` (an error reply, its ERR code kept or not) is the server not knowing the
    command: a module older than DLOCK.RUNID (or none), whose run_id INFO server still gives."""
    return said.lower().removeprefix("err ").startswith("unknown command")


def run_id_refused(said: str) -> str:
    """Why a server that refused DLOCK.RUNID (it `said` so: NOPERM, a user without it) is refused."""
    return (
        f"cannot tell which server this is (DLOCK.RUNID refused: {said}): allow the user DLOCK.RUNID"
        " (+dlock.runid; +@dlock has it on Redis 7.2+), which dlock reads the server's run_id with"
    )


def info_refused(said: str) -> str:
    """Why a server that refused INFO server (it `said` so; a module older than DLOCK.RUNID) is
    refused."""
    return (
        f"cannot tell which server this is (INFO server refused: {said}): allow the user INFO (+info),"
        " which dlock reads the server's run_id with"
    )
