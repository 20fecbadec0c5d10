"""Leader election's pure parts (docs/election.md; the Rust client's election.rs): a campaign's
owner carries the candidate's value after its id (`<id> <value>`), the leader's epoch is its
fencing token, and who leads is one rule (conformance/leaders.json) that `leader()` and
`observe()` both apply to what each node holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import NodeFailure, WrongKindError
from .admin import as_fields, text

#: The longest value a candidate may carry: the owner (at most 256 bytes on the nodes) also
#: holds the candidate's id, its round and a space.
MAX_VALUE_LEN = 200


@dataclass(frozen=True)
class Leader:
    """Who leads an election: the candidate id (unique per campaign), the value it campaigned
    with or last proclaimed, and its epoch (the fencing token of its leadership, larger than
    every earlier leader's)."""

    id: str
    value: str
    epoch: int


#: One node's holder of the election's lock: (owner, token), or None when free.
Seen = tuple[str, int] | None

#: What a node did not answer: no view of it.
UNKNOWN = "unknown"


def split_owner(owner: str) -> tuple[str, str]:
    """An owner as (candidate id, value): the value follows the first space."""
    id_, _, value = owner.partition(" ")
    return id_, value


def check_election(name: object, value: object = "") -> tuple[str, str]:
    """Refuses a name or value the nodes would refuse, before any node is asked."""
    if not isinstance(name, str):
        raise TypeError(f"an election's name must be a str, got {type(name).__name__}")
    if not isinstance(value, str):
        raise TypeError(f"a leader's value must be a str, got {type(value).__name__}")
    if not name:
        raise ValueError("an election needs a name")
    if len(value.encode()) > MAX_VALUE_LEN:
        raise ValueError(f"a leader's value is at most {MAX_VALUE_LEN} bytes, got {len(value.encode())}")
    return name, value


def labelled(id_: str, value: str) -> str:
    """The owner that carries `value` after the candidate id (just the id for an empty value)."""
    return f"{id_} {value}" if value else id_


def leader_view(nodes: Sequence[Seen | str], needed: int, previous: Leader | None = None) -> Leader | str | None:
    """Who leads, from what each node holds (UNKNOWN: it did not answer): the candidate id
    holding on `needed` nodes, None when none does, UNKNOWN when fewer than `needed` answered.
    Its epoch is the token it holds on `needed` nodes (the committed one), else the `previous`
    leader's while the same candidate still holds it somewhere, else its smallest (a node granted
    late keeps its own token); its value the one it holds on `needed` nodes,
    else the `previous` leader's while a proclamation spreads, else the first node's."""
    answered = [seen for seen in nodes if seen != UNKNOWN]
    if len(answered) < needed:
        return UNKNOWN
    holders = [(*split_owner(seen[0]), seen[1]) for seen in answered if isinstance(seen, tuple)]
    ids = [id_ for id_, _, _ in holders]
    chosen = next((h for h in holders if ids.count(h[0]) >= needed), None)
    if chosen is None:
        return None
    id_, first_value = chosen[0], chosen[1]
    mine = [h for h in holders if h[0] == id_]
    tokens = [t for _, _, t in mine]
    # A leadership's epoch never changes while it lasts: the one already seen is kept while a
    # node holds it (a resignation may release the epoch's nodes first).
    kept = previous.epoch if previous is not None and previous.id == id_ and previous.epoch in tokens else None
    epoch = next((t for t in tokens if tokens.count(t) >= needed), kept if kept is not None else min(tokens))
    values = [v for _, v, _ in mine]
    agreed = next((v for v in values if values.count(v) >= needed), None)
    if agreed is not None:
        return Leader(id_, agreed, epoch)
    if previous is not None and (previous.id, previous.epoch) == (id_, epoch):
        return Leader(id_, previous.value, epoch)
    return Leader(id_, first_value, epoch)


def seen_holder(name: str, node: str, reply: object) -> Seen | NodeFailure:
    """A node's holder from a DLOCK.STATUS or DLOCK.OBSERVE reply: None when free, else its
    owner and token; a failure when the reply is none of those. A shared lock or a semaphore (a
    `kind` field) is not an election: WrongKindError."""
    if isinstance(reply, NodeFailure) or reply is None:
        return reply
    try:
        fields = as_fields(reply)
    except ValueError:
        return NodeFailure(node, f"unexpected reply {reply!r} about {name}")
    if "kind" in fields:
        raise WrongKindError(name, node, "held as a shared lock or semaphore, not an election")
    owner, token = fields.get("owner"), fields.get("token")
    if owner is None or token is None:
        return NodeFailure(node, f"a reply about {name} without owner and token")
    try:
        return text(owner), int(text(token))
    except ValueError:
        return NodeFailure(node, f"a reply about {name} with a bad token {token!r}")
