"""What an acquisition asks for (docs/python/shared.md): an exclusive hold of a lock (the
default), a shared hold of it, or a permit of a semaphore of limit k. The kind decides the option
appended to every DLOCK.ACQUIRE of the acquisition (commands.kind_option) and how many nodes make
its quorum (timing.quorum). Free of I/O."""

from __future__ import annotations

from dataclasses import dataclass

from .timing import quorum

#: The largest semaphore limit the nodes take (the module's MAX_LIMIT).
MAX_LIMIT = 10_000


@dataclass(frozen=True)
class Kind:
    """`shared`: a shared hold of a lock; `limit`: a permit of a semaphore of that limit; neither:
    an exclusive hold (never both: check_kind refuses it)."""

    shared: bool = False
    limit: int | None = None

    def quorum(self, nodes: int) -> int:
        """How many of `nodes` must grant, commit and extend a hold of this kind."""
        return quorum(nodes, self.limit)

    def __str__(self) -> str:
        if self.limit is not None:
            return f"a permit of a semaphore of limit {self.limit}"
        return "a shared hold" if self.shared else "an exclusive hold"


EXCLUSIVE = Kind()


def check_limit(limit: object) -> int | None:
    """A semaphore's limit: None, or an int from 1 to MAX_LIMIT (a bool is not one)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int from 1 to {MAX_LIMIT} or None, got {limit!r}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be from 1 to {MAX_LIMIT}, got {limit}")
    return limit


def check_kind(shared: object, limit: object) -> Kind:
    """The kind asked for by `shared=` and `limit=`; TypeError / ValueError before any node is asked."""
    if not isinstance(shared, bool):
        raise TypeError(f"shared must be True or False, got {shared!r}")
    checked = check_limit(limit)
    if shared and checked is not None:
        raise ValueError(
            f"shared=True and limit={checked} are exclusive: a lock's shared side or a semaphore's permit, not both"
        )
    return Kind(shared, checked)
