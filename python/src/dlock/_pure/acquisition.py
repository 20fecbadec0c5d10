"""The decisions of one fair acquisition across N nodes as a pure state machine
(client/src/acquisition.rs, the machine the model checker explores): replies go in, the next
steps come out. The sync and asyncio drivers feed it over the network.

Round by round (docs/protocol.md section 5):
1. Wait on every node with one ticket (ACQUIRE ... WAIT ... TICKET t), as owner `o:round`.
2. With grants from a quorum (`needed`: a majority, more for a semaphore), commit their largest
   token with FENCE on the granting nodes.
   A grant is tentative until committed; a smaller ticket may wound it meanwhile, and the node
   then refuses the FENCE.
3. Committed on the quorum: held. Otherwise release everything of the round and wait again with
   the same ticket (it keeps its place) under a new owner name.
With one node there is nothing to commit: the grant is the lock.

An attempt that does not wait on the nodes (try_lock, retry mode: see attempt.py) runs the same
machine for one round only (`start_once`): every node's answer comes within the per-node
timeout, so the commit waits for all of them and covers every node that granted; a commit that
misses fails the acquisition. Without the commit (`commit` off: how the clients run it) the
grants are the lock once every node answered; with fencing on, the hold then owes its commit
until its token is read (commit.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Granted:
    node: int
    round: int
    token: int


@dataclass(frozen=True)
class Unavailable:
    """The wait ended without a grant (nil, error, timeout, node down)."""

    node: int
    round: int


@dataclass(frozen=True)
class Fenced:
    node: int
    round: int
    committed: bool


Event = Granted | Unavailable | Fenced


@dataclass(frozen=True)
class Wait:
    round: int
    nodes: list[int]


@dataclass(frozen=True)
class Fence:
    round: int
    token: int
    nodes: list[int]


@dataclass(frozen=True)
class Release:
    """RELEASE the owner of `round` on these nodes: frees its grants, withdraws its waits."""

    round: int
    nodes: list[int]


@dataclass(frozen=True)
class Held:
    token: int


@dataclass(frozen=True)
class Failed:
    """No quorum is possible this round (too many nodes unavailable)."""


Step = Wait | Fence | Release | Held | Failed


class Acquisition:
    """One acquisition, possibly over several rounds."""

    def __init__(self, nodes: int, needed: int, once: bool = False, commit: bool = True) -> None:
        self.nodes = nodes
        self.needed = min(max(needed, 1), max(nodes, 1))
        self.once = once  # one round only: a commit that misses fails the acquisition
        self.commit = commit  # grants are committed (FENCE) before the lock is held
        self.round = 0
        self.granted: list[int | None] = [None] * nodes
        self.unavailable = [False] * nodes
        self.phase = "waiting"  # waiting | committing | held | failed
        self.token = 0
        self.pending: list[bool] = []
        self.committed: list[bool] = []

    @staticmethod
    def start(nodes: int, needed: int) -> tuple[Acquisition, list[Step]]:
        """`needed`: the acquisition's quorum (Kind.quorum of `nodes`)."""
        return Acquisition(nodes, needed), [Wait(0, list(range(nodes)))]

    @staticmethod
    def start_once(nodes: int, needed: int, commit: bool) -> tuple[Acquisition, list[Step]]:
        """One round (no server wait): held once `needed` nodes committed (granted, without
        `commit`), failed otherwise."""
        return Acquisition(nodes, needed, once=True, commit=commit), [Wait(0, list(range(nodes)))]

    def held(self) -> int | None:
        return self.token if self.phase == "held" else None

    def is_over(self) -> bool:
        return self.phase in ("held", "failed")

    def abandon(self) -> list[Step]:
        """Gives up from outside (a deadline, a refused kind): release everything of this round."""
        return [] if self.is_over() else self._fail()

    def on(self, event: Event) -> list[Step]:
        """Feeds one reply. Replies of earlier rounds are stale: ignored, except a grant, which
        is released at once (it would otherwise hold the lock on that node until its TTL)."""
        if event.node >= self.nodes:
            return []
        if event.round != self.round:
            if isinstance(event, Granted) and event.round < self.round:
                return [Release(event.round, [event.node])]
            return []
        if isinstance(event, Granted):
            return self._on_granted(event.node, event.token)
        if isinstance(event, Unavailable):
            return self._on_unavailable(event.node)
        return self._on_fenced(event.node, event.committed)

    def _needed(self) -> int:
        return self.needed

    def granted_nodes(self) -> list[int]:
        """The nodes that granted this round."""
        return [n for n in range(self.nodes) if self.granted[n] is not None]

    def _on_granted(self, node: int, token: int) -> list[Step]:
        self.granted[node] = token
        if self.phase != "waiting":
            return []  # a late grant: released with everything else at the end
        return self._commit_when_ready()

    def _commit_when_ready(self) -> list[Step]:
        """With grants from a quorum (and, in one round only, every node's answer in, so that the
        commit covers every node that granted): commit the largest token, or hold it."""
        grants = self.granted_nodes()
        answered = all(self.granted[n] is not None or self.unavailable[n] for n in range(self.nodes))
        if len(grants) < self._needed() or (self.once and not answered):
            return []
        top = max(t for t in self.granted if t is not None)
        if self.nodes == 1 or not self.commit:
            return self._hold(top)
        self.phase, self.token = "committing", top
        self.pending = [n in grants for n in range(self.nodes)]
        self.committed = [False] * self.nodes
        return [Fence(self.round, top, grants)]

    def _on_unavailable(self, node: int) -> list[Step]:
        self.unavailable[node] = True
        possible = self.unavailable.count(False)
        if self.phase == "waiting" and possible < self._needed():
            return self._fail()
        if self.phase == "waiting" and self.once:
            return self._commit_when_ready()  # maybe the last answer the round waited for
        return []

    def _fail(self) -> list[Step]:
        """No quorum this time: release everything of this round and give up."""
        self.phase = "failed"
        return [self._release_all(), Failed()]

    def _on_fenced(self, node: int, ok: bool) -> list[Step]:
        if self.phase != "committing" or not self.pending[node]:
            return []  # not committing, or a duplicate reply
        self.pending[node] = False
        self.committed[node] = ok
        count = self.committed.count(True)
        if count >= self._needed():
            return self._hold(self.token)
        if count + self.pending.count(True) < self._needed():
            return self._fail() if self.once else self._next_round()
        return []

    def _hold(self, token: int) -> list[Step]:
        """Held. Waits still queued on nodes that did not grant stay: a late grant there is the
        holder's too, released with everything else at the end."""
        self.phase, self.token = "held", token
        return [Held(token)]

    def _next_round(self) -> list[Step]:
        """The commit missed the quorum: release everything of this round, wait again."""
        release = self._release_all()
        self.round += 1
        self.granted = [None] * self.nodes
        self.unavailable = [False] * self.nodes
        self.phase = "waiting"
        return [release, Wait(self.round, list(range(self.nodes)))]

    def _release_all(self) -> Release:
        return Release(self.round, list(range(self.nodes)))
