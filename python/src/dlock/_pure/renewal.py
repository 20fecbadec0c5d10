"""When a held lock's watchdog extends it, and when it declares the lock lost: the one
lease-loss contract every client keeps (docs/election.md, conformance/renewals.json; the Rust
client's renewal.rs).

A lock is lost at its *renew deadline*, renew_margin before its validity ends, unless an
extension confirmed by a quorum came first: never after the lease may already have ended on the
nodes, so the holder has the margin to stop before anyone else can be granted. An extension the
nodes refused (a quorum is out of reach: they say it is not held) is a loss at once; one that
could not be confirmed (nodes unreachable, too slow) is tried again, at shorter and shorter
pauses, until the renew deadline. Everything in whole milliseconds, as every client counts."""

from __future__ import annotations

from typing import Literal

#: How the last extension went (the grant itself counts as "extended"): "refused" when enough
#: nodes said "not held" that no quorum can extend it any more; "unconfirmed" when too few
#: answered, or too late to count.
Extension = Literal["extended", "refused", "unconfirmed"]


def renew_margin(ttl_ms: int) -> int:
    """How long (ms) before its validity ends a lock without a confirmed extension is declared
    lost: a tenth of the TTL, at least 1 ms."""
    return max(ttl_ms // 10, 1)


def renewal(ttl_ms: int, interval_ms: int, left_ms: int, last: Extension) -> int | None:
    """The watchdog's next step, with `left_ms` of validity after `last`: the pause (ms) before
    the next extension, or None: lost."""
    margin = renew_margin(ttl_ms)
    if last == "refused" or left_ms <= margin:
        return None
    pause = interval_ms // 2 if last == "unconfirmed" else interval_ms
    # Halfway to the renew deadline at the latest: the extension has time to be confirmed.
    return max(min(pause, (left_ms - margin) // 2), 1)


def outcome(nodes: int, needed: int, refused: int) -> Extension:
    """What an extension a quorum did not confirm comes to: refused when so many of the `nodes`
    said "not held" that no quorum is left to extend it, else unconfirmed (tried again)."""
    return "refused" if refused > nodes - needed else "unconfirmed"
