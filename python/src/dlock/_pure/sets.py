"""Sets: several resources taken all or nothing (docs/commands.md, DLOCK.ACQUIREALL and its
kin; conformance/sets.json). On each node a set is one lock: one token or nil for the whole set,
one lease, so the quorum engine (driver, commit, renewal, release) runs it unchanged and only the
commands differ (commands.py). The quorum is the exclusive one (a majority) even when some
members are shared."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redis.crc import key_slot

#: The most keys one set may name (the module's MAX_SET).
MAX_SET = 16
#: Why a cross-slot set has no one token (each of its slot groups has its own).
ONE_TOKEN = "a set across {} slots has one token per slot group: use tokens()"


@dataclass(frozen=True)
class KeySet:
    """The keys of a set, in the caller's order, and their modes: None when all are exclusive,
    else one letter per key, x (exclusive) or s (shared)."""

    keys: tuple[str, ...]
    modes: str | None = None

    def __str__(self) -> str:
        """The set's name in messages: its keys joined by commas."""
        return ",".join(self.keys)


def check_set(resources: object, modes: object = None) -> KeySet:
    """The set asked for, or ValueError / TypeError (the invalid-argument errors) before anything
    is sent: no key, a key twice, more than MAX_SET, modes that are not one x/s per key."""
    if isinstance(resources, (str, bytes)) or not isinstance(resources, Sequence):
        raise TypeError(f"resources must be a list of str, got {type(resources).__name__}")
    keys = tuple(resources)
    if not all(isinstance(key, str) for key in keys):
        raise TypeError("resources must be a list of str")
    if not keys:
        raise ValueError("a set needs at least one resource")
    if len(keys) > MAX_SET:
        raise ValueError(f"a set takes at most {MAX_SET} resources, got {len(keys)}")
    if any(not key for key in keys):
        raise ValueError("the resource name must not be empty")
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"resource {key!r} is given twice in the set")
        seen.add(key)
    return KeySet(keys, check_modes(modes, len(keys)))


def check_modes(modes: object, count: int) -> str | None:
    """One letter per key (a str like "xs", or a list of letters); None when all are exclusive."""
    if modes is None:
        return None
    if not isinstance(modes, (str, Sequence)) or not all(isinstance(m, str) for m in modes):
        raise TypeError("modes must be a list of 'x' / 's' letters, one per resource")
    letters = "".join(modes)
    if len(letters) != count or len(list(modes)) != count or set(letters) - {"x", "s"}:
        raise ValueError(f"modes must be one 'x' (exclusive) or 's' (shared) per resource, got {list(modes)!r}")
    return letters if "s" in letters else None


def groups(keys: Sequence[str]) -> list[list[str]]:
    """On a Redis Cluster, the set taken group by group: the keys of one slot together, groups
    ordered by slot, keys sorted by bytes inside a group (the one global order that keeps
    hold-and-wait across groups free of deadlock)."""
    by_slot: dict[int, list[str]] = {}
    for key in keys:
        by_slot.setdefault(key_slot(key.encode()), []).append(key)
    return [sorted(by_slot[slot], key=str.encode) for slot in sorted(by_slot)]


def split(resources: KeySet) -> list[KeySet]:
    """The set as its slot groups (`groups`), each a set of its own with its keys' modes as the
    caller gave them: one group when the keys share a slot (the set itself, unchanged)."""
    parts = groups(resources.keys)
    if len(parts) == 1:
        return [resources]
    modes = dict(zip(resources.keys, resources.modes or "x" * len(resources.keys), strict=True))
    return [KeySet(tuple(part), check_modes("".join(modes[key] for key in part), len(part))) for part in parts]
