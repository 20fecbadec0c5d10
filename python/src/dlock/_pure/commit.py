"""The commit a hold may owe, free of I/O (client/src/commit.rs, ported one to one;
conformance/commits.json).

An attempt that does not wait on the nodes (`try_lock`, retry mode) holds once a quorum granted:
its grants are plain, and no ticket can wound them, so exclusion does not need the commit. Its
token does: the largest grant is a fencing token only once a quorum committed it. So the commit
is paid when the token is first read (`Lock.token()`), and only then: FENCE on every node that
granted, the hold's token, the lease set afresh. A quorum of commits gives the token; too few
left possible makes the lock lost, never an uncommitted token. A queued hold committed before it
was held (a smaller ticket may wound a tentative grant), one node has nothing to commit, and
with fencing off there is no fencing token to commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal


def owed(no_wait: bool, nodes: int, fencing: bool) -> bool:
    """Whether a hold taken by an attempt of this kind owes a commit before its token is read."""
    return no_wait and nodes > 1 and fencing


@dataclass(frozen=True)
class Committed:
    """A quorum committed this token."""

    token: int


#: Replies still decide it: reading the token waits.
PENDING: Final = "pending"
#: Too few nodes can still commit: the lock is lost.
LOST: Final = "lost"

#: Where a commit stands.
Outcome = Committed | Literal["pending", "lost"]


class Commit:
    """One commit of one hold's token."""

    def __init__(self, nodes: int, needed: int, token: int) -> None:
        self.needed = max(needed, 1)
        self.token = token
        self.pending = [False] * nodes  # the nodes asked whose answer has not come
        self.committed = 0
        self.outcome: Outcome = PENDING

    @staticmethod
    def start(nodes: int, needed: int, token: int, holding: Sequence[int]) -> tuple[Commit, list[int]]:
        """Starts the commit of `token` on `holding` (the nodes that granted it), held once
        `needed` of them committed: the machine and the nodes to send FENCE to."""
        commit = Commit(nodes, needed, token)
        asked = [n for n in holding if 0 <= n < nodes]
        for n in asked:
            commit.pending[n] = True
        commit._decide()
        return commit, asked

    def on_fenced(self, node: int, committed: bool) -> Outcome:
        """`node`'s answer to its FENCE: committed, or not (refused: no longer held by this
        owner; or the node failed). Answers from nodes not asked, repeated, or after the outcome
        is decided change nothing."""
        if self.outcome != PENDING or not 0 <= node < len(self.pending) or not self.pending[node]:
            return self.outcome
        self.pending[node] = False
        self.committed += int(committed)
        self._decide()
        return self.outcome

    def _decide(self) -> None:
        open_ = self.pending.count(True)
        if self.committed >= self.needed:
            self.outcome = Committed(self.token)
        elif self.committed + open_ < self.needed:
            self.outcome = LOST
