"""Replica acknowledgement (client/src/transport/ack.rs): `WAIT replicas timeout` written with
each grant, extension and commit in the same write, so the write counts only once the asked
replicas have it, and a failover right after cannot promote a replica that never saw it.

When fewer replicas acknowledge in time, the node's answer becomes a failure naming how many
did. The rounds then treat that node as one that did not grant: a lock without a majority of
acknowledged grants is released and reported as NoQuorum, an extension without one as lost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .commands import Args
from .options import ReplicaAck

#: How late a server answers a blocked WAIT past its timeout: it checks blocked clients'
#: timeouts once per `hz` tick (10 per second by default).
TIMEOUT_RESOLUTION = 0.1

# Requests whose success is a write a failover must not lose (a lost RELEASE only leaves a lock
# to expire), and what their success is called.
_ACKNOWLEDGED = {
    "DLOCK.ACQUIRE": "granted",
    "DLOCK.FENCE": "committed",
    "DLOCK.EXTEND": "extended",
    "DLOCK.ACQUIREALL": "granted",
    "DLOCK.FENCEALL": "committed",
    "DLOCK.EXTENDALL": "extended",
}
#: The requests whose success is a token (the others': 1).
_GRANTS = ("DLOCK.ACQUIRE", "DLOCK.ACQUIREALL")


@dataclass(frozen=True)
class Ack:
    """How many replicas must have a write, and how long (seconds) to wait for them."""

    replicas: int
    timeout: float

    @property
    def ms(self) -> int:
        """WAIT's timeout in whole milliseconds, at least 1 (0 would make WAIT block forever)."""
        return max(1, int(self.timeout * 1000))


def for_node(replica_ack: ReplicaAck, timeout: float, replicated: bool) -> Ack | None:
    """What one node asks: `replicated` says whether it is a cluster or a sentinel-managed master,
    which fail over to a replica."""
    if replica_ack == "auto":
        replicas = 1 if replicated else 0
    elif replica_ack == "off":
        replicas = 0
    else:
        replicas = replica_ack
    return Ack(replicas, timeout) if replicas > 0 else None


def allowance(timeout: float) -> float:
    """What waiting up to `timeout` for replicas may cost, the server's timer resolution included."""
    return timeout + TIMEOUT_RESOLUTION if timeout > 0 else 0.0


def call_bound(timeout: float, acks: Sequence[Ack | None]) -> float:
    """The longest one call to a node may take when it does not wait on the server: the
    per-node timeout plus the longest replica acknowledgement any node asks (none: nothing more,
    where Rust's bound adds the option's timeout whether or not a node uses it)."""
    return timeout + max((allowance(ack.timeout) for ack in acks if ack is not None), default=0.0)


def acknowledged(request: Args, ack: Ack | None) -> Ack | None:
    """`ack` if `request` is one that is acknowledged."""
    return ack if ack is not None and request[0] in _ACKNOWLEDGED else None


def commands(request: Args, ack: Ack | None) -> tuple[Args, ...]:
    """What is written for `request`: itself, then with `ack` on a writing request, WAIT. A
    wait's grant is written by the client whose RELEASE handed the lock over, yet the WAIT after
    it covers it: the server moves a module-unblocked client's replication offset to the current
    one (Redis 7.0+ and Valkey)."""
    ack = acknowledged(request, ack)
    return (request,) if ack is None else (request, ("WAIT", ack.replicas, ack.ms))


def extra_time(request: Args, ack: Ack | None) -> float:
    """The extra time a call may take for its acknowledgement."""
    ack = acknowledged(request, ack)
    return 0.0 if ack is None else allowance(ack.timeout)


def shortfall(request: Args, replies: Sequence[object], ack: Ack | None) -> str | None:
    """Why the request's reply (replies[0]) does not count: it wrote (a token for a grant, 1 for
    an extension or commit) but fewer replicas than asked acknowledged. None when it counts."""
    ack = acknowledged(request, ack)
    if ack is None or not replies or not _wrote(request, replies[0]):
        return None
    acked = replies[-1] if len(replies) > 1 else None
    if isinstance(acked, int) and not isinstance(acked, bool):
        if acked >= ack.replicas:
            return None
        what = _ACKNOWLEDGED[str(request[0])]
        return f"{what} but only {acked} of {ack.replicas} replicas acknowledged within {ack.ms} ms"
    return f"WAIT: unexpected reply {acked!r}"


def _wrote(request: Args, reply: object) -> bool:
    if isinstance(reply, bool) or not isinstance(reply, int):
        return False
    return reply > 0 if request[0] in _GRANTS else reply == 1
