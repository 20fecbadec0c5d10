"""Redlock's arithmetic and the names the protocol needs, free of I/O (client/src/timing.rs,
shared.rs, waiting.rs): quorum size, clock-drift allowance, validity, owners, tickets."""

from __future__ import annotations

import random
import secrets
import threading
import time
from typing import Protocol


class Drift(Protocol):
    """What the clock-drift allowance is made of (the manager's options have both)."""

    @property
    def drift_factor(self) -> float: ...

    @property
    def drift_constant(self) -> float: ...


class Pause(Protocol):
    """What a retry pause is made of (the manager's options have both)."""

    @property
    def retry_delay(self) -> float: ...

    @property
    def retry_jitter(self) -> float: ...


def quorum(nodes: int, limit: int | None = None) -> int:
    """How many of `nodes` must grant (and commit, and extend) a hold: a majority, N//2 + 1, for
    a lock (exclusive or shared); for a permit of a semaphore of `limit` k, the smallest q with
    q > N*k/(k+1), i.e. N*k//(k+1) + 1. Each node grants at most k permits, so k+1 holders each
    on q nodes would need (k+1)*q > N*k of them: they cannot all be held. k = 1 is the majority;
    k >= N-1 needs every node. The one place this is decided (docs/shared.md)."""
    if limit is None:
        return nodes // 2 + 1
    return nodes * limit // (limit + 1) + 1


def drift(ttl_ms: int, opts: Drift) -> float:
    """How much the nodes' clocks may disagree over a TTL, in seconds: ttl * factor + constant."""
    return ttl_ms / 1000 * opts.drift_factor + opts.drift_constant


def validity(ttl_ms: int, started: float, now: float, opts: Drift) -> float | None:
    """Seconds the lock is still safe to use after an operation that started at `started`
    (monotonic): ttl - elapsed - drift, or None when nothing is left."""
    left = ttl_ms / 1000 - max(0.0, now - started) - drift(ttl_ms, opts)
    return left if left > 1e-9 else None  # under a nanosecond is float rounding, not time left


def new_owner() -> str:
    """128 random bits in hex: unique per acquisition, as the protocol requires."""
    return secrets.token_hex(16)


def round_owner(base: str, round_: int) -> str:
    """Queue mode owns each round under its own name, so a late RELEASE of an abandoned round
    cannot free the next one."""
    return f"{base}:{round_}"


def retry_pause(opts: Pause) -> float:
    """retry_delay plus a random share of retry_jitter, so contenders do not retry in lockstep."""
    return opts.retry_delay + random.uniform(0, opts.retry_jitter)


_ticket_lock = threading.Lock()
_last_ticket = 0


def draw_ticket() -> int:
    """Wall-clock microseconds, strictly increasing within this process: equal tickets cannot
    wound each other, so two calls in the same microsecond must not tie. Across processes a tie
    costs only time, never safety."""
    global _last_ticket
    now_us = time.time_ns() // 1000
    with _ticket_lock:
        _last_ticket = max(now_us, _last_ticket + 1)
        return _last_ticket


def ms(seconds: float) -> int:
    """Whole milliseconds, at least 1 (0 would mean "no limit" to WAIT)."""
    return max(1, int(seconds * 1000))
