"""The manager's options, their defaults (the Rust crate's, client/src/options.rs) and the
argument checks every entry point runs before anything is sent to a node."""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from ..errors import UnitWarning
from .timing import validity

WaitMode = Literal["queue", "retry"]

#: "auto": 1 replica on cluster and sentinel nodes, none on single masters; "off"; or a replica
#: count asked of every node (0 is off).
ReplicaAck = Literal["auto", "off"] | int

#: A lock call's TTL or wait: seconds (a float, as redis-py takes timeouts), or a timedelta.
Duration = float | timedelta

#: The nodes cap a TTL at dlock.max-ttl-ms (default one day); we refuse what no node would take.
MAX_TTL_SECONDS = 86_400.0
#: A TTL in seconds above this is more likely milliseconds typed by habit: it is warned about.
LIKELY_MILLISECONDS = 3_600.0
#: The longest duration the nodes take in any argument (WAIT's included): ten years, the module's
#: LIMIT_MS. A longer wait is refused before it is sent, where every node would refuse it.
MAX_WAIT_SECONDS = 315_360_000.0


@dataclass(frozen=True)
class Options:
    """Defaults as in docs/which-call.md; durations in seconds."""

    timeout: float = 0.050
    retry_count: int | None = None  # None: unlimited (`wait` bounds it anyway)
    retry_delay: float = 0.025
    retry_jitter: float = 0.025
    drift_factor: float = 0.01
    drift_constant: float = 0.002
    fencing: bool = True
    wait_mode: WaitMode = "queue"
    max_hold: float | None = None
    extend_interval: float | None = None  # None: ttl / 3
    replica_ack: ReplicaAck = "auto"  # "auto": 1 replica on cluster and sentinel nodes, none on single masters
    ack_timeout: float = 0.100

    def __post_init__(self) -> None:
        positive(self.timeout, "timeout")
        if self.retry_count is not None:
            if isinstance(self.retry_count, bool) or not isinstance(self.retry_count, int):
                raise TypeError(f"retry_count must be an int or None, got {self.retry_count!r}")
            if self.retry_count < 0:
                raise ValueError(f"retry_count must be >= 0, got {self.retry_count}")
        not_negative(self.retry_delay, "retry_delay")
        not_negative(self.retry_jitter, "retry_jitter")
        not_negative(self.drift_factor, "drift_factor")
        not_negative(self.drift_constant, "drift_constant")
        if not isinstance(self.fencing, bool):
            raise TypeError(f"fencing must be True or False, got {self.fencing!r}")
        if self.wait_mode not in ("queue", "retry"):
            raise ValueError(f"wait_mode must be 'queue' or 'retry', got {self.wait_mode!r}")
        if self.max_hold is not None:
            positive(self.max_hold, "max_hold")
        if self.extend_interval is not None:
            positive(self.extend_interval, "extend_interval")
        check_replica_ack(self.replica_ack)
        positive(self.ack_timeout, "ack_timeout")
        if self.drift_factor >= 1:
            raise ValueError(f"drift_factor must be below 1 (a share of the TTL), got {self.drift_factor!r}")
        for name in ("timeout", "retry_delay", "retry_jitter", "max_hold", "extend_interval", "ack_timeout"):
            at_most_ten_years(getattr(self, name), name)


def number(value: object, name: str) -> float:
    """`value` as a finite float; TypeError for non-numbers (bool included), ValueError for NaN/inf."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def positive(value: object, name: str) -> float:
    seconds = number(value, name)
    if seconds <= 0:
        raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
    return seconds


def not_negative(value: object, name: str) -> float:
    seconds = number(value, name)
    if seconds < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return seconds


def check_replica_ack(value: object) -> ReplicaAck:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"replica_ack must be 'auto', 'off' or a replica count, got {value!r}")
    if isinstance(value, str) and value not in ("auto", "off"):
        raise ValueError(f"replica_ack must be 'auto', 'off' or a replica count, got {value!r}")
    if isinstance(value, int) and value < 0:
        raise ValueError(f"replica_ack must be a replica count >= 0, got {value}")
    return value  # type: ignore[return-value]  # narrowed to "auto" | "off" | int above


def check_ttl(ttl: object) -> int:
    """The TTL in whole milliseconds, as the nodes apply it (rounded down, at least 1). A number
    of seconds over an hour is probably milliseconds: it is taken, with a UnitWarning (a
    timedelta says what it means, and is not warned about)."""
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else number(ttl, "ttl")
    if seconds > LIKELY_MILLISECONDS and not isinstance(ttl, timedelta) and seconds <= MAX_TTL_SECONDS:
        warnings.warn(
            UnitWarning(
                f"ttl={ttl!r} is {seconds / 3600:.1f} hours: dlock takes seconds (ttl=10.0 is ten seconds);"
                f" for a lease this long, pass a timedelta (ttl=timedelta(hours=3))"
            ),
            stacklevel=_caller(),
        )
    if seconds < 0.001:
        raise ValueError(f"ttl must be at least 0.001 s (1 ms), got {ttl!r}")
    if seconds > MAX_TTL_SECONDS:
        raise ValueError(
            f"ttl must be at most {MAX_TTL_SECONDS:.0f} s (the nodes' default dlock.max-ttl-ms), got {ttl!r}"
        )
    return int(seconds * 1000)


def at_most_ten_years(seconds: float | None, name: str) -> None:
    """A duration the nodes are sent or the clock is moved by: at most MAX_WAIT_SECONDS."""
    if seconds is not None and seconds > MAX_WAIT_SECONDS:
        raise ValueError(
            f"{name} must be at most 315360000000 ms (ten years, the longest the nodes take), got {seconds!r} s"
        )


def check_wait(wait: object) -> float:
    seconds = not_negative(wait.total_seconds() if isinstance(wait, timedelta) else wait, "wait")
    at_most_ten_years(seconds, "wait")
    return seconds


def check_lease(ttl: object, opts: Options) -> int:
    """check_ttl, and a TTL that leaves some validity after the clock drift allowance (validity
    is ttl - elapsed - drift: a shorter one is never valid, and asking for it would only retry
    until the wait ran out). The message names the shortest."""
    ttl_ms = check_ttl(ttl)
    if _valid(ttl_ms, opts):
        return ttl_ms
    allowance = (
        f"the clock drift allowance ({opts.drift_factor * 100:g}% of the TTL + {opts.drift_constant * 1000:g} ms)"
    )
    shortest = shortest_ttl_ms(opts)
    if shortest is None:
        raise ValueError(f"no ttl leaves any validity after {allowance}: lower the drift allowance")
    raise ValueError(
        f"ttl must be at least {shortest} ms: a shorter one leaves no validity after {allowance}, got {ttl_ms} ms"
    )


def _valid(ttl_ms: int, opts: Options) -> bool:
    """Whether a lease of `ttl_ms` leaves any validity with nothing elapsed."""
    return validity(ttl_ms, 0.0, 0.0, opts) is not None


def shortest_ttl_ms(opts: Options) -> int | None:
    """The shortest whole-millisecond TTL with some validity after the drift allowance."""
    if opts.drift_factor >= 1:
        return None
    # ttl * (1 - factor) > constant; the loop settles what floating point leaves in doubt.
    ms = max(1, math.floor(opts.drift_constant * 1000 / (1 - opts.drift_factor)) - 1)
    while ms <= MAX_TTL_SECONDS * 1000:
        if _valid(ms, opts):
            return ms
        ms += 1
    return None


def _caller() -> int:
    """The stack level of the first frame outside this package: where a warning points."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("dlock."):
        level, frame = level + 1, frame.f_back
    return level


def check_resource(resource: object) -> str:
    if not isinstance(resource, str):
        raise TypeError(f"resource must be a str, got {type(resource).__name__}")
    if not resource:
        raise ValueError("the resource name must not be empty")
    return resource


def check_owner(owner: object) -> str:
    """An owner name as the nodes take it: 1 to 256 bytes."""
    if not isinstance(owner, str):
        raise TypeError(f"owner must be a str, got {type(owner).__name__}")
    if not 1 <= len(owner.encode()) <= 256:
        raise ValueError(f"owner must be 1 to 256 bytes, got {len(owner.encode())} bytes")
    return owner
