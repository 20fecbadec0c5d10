"""One Redis Cluster as one quorum node (client/src/transport/cluster.rs, slots.rs), the parts
free of I/O: the slot map read from CLUSTER SLOTS, which master a resource goes to, and
what a redirect means. The sync and asyncio transports do only the talking.

The client routes itself rather than through redis-py's cluster client because a server-side
wait blocks the connection it is sent on: each master is reached like a single master, with
connections for short requests and separate ones for waits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from redis.crc import key_slot
from redis.exceptions import AskError, MovedError

from .commands import Args
from .urls import Seed, address

SLOTS = 16384
#: Redirects followed for one request before giving up (a slot moving twice in one call is
#: already rare).
MAX_REDIRECTS = 5
#: What reads the slot map.
CLUSTER_SLOTS: Args = ("CLUSTER", "SLOTS")


def host_of(address: str) -> str:
    return address.rpartition(":")[0].strip("[]")


def slot_of(resource: str) -> int:
    """The resource's hash slot ({hash tags} included), as redis-py computes it."""
    return key_slot(resource.encode())


class SlotMap:
    """Slot ranges and the `host:port` of the master serving each."""

    def __init__(self, ranges: Sequence[tuple[int, int, str]]) -> None:
        self.ranges = sorted(ranges)

    def master(self, slot: int) -> str | None:
        for start, end, master in self.ranges:
            if start <= slot <= end:
                return master
        return None

    @staticmethod
    def parse(reply: object, asked_host: str) -> SlotMap:
        """Reads a CLUSTER SLOTS reply; a master announced with an empty (or `?`) host is on
        `asked_host`, the host the reply came from. ValueError when it is not one."""
        if not isinstance(reply, list):
            raise ValueError(f"CLUSTER SLOTS: unexpected reply {reply!r}")
        ranges = [_parse_range(entry, asked_host) for entry in reply]
        if not ranges:
            raise ValueError("CLUSTER SLOTS: no slot is served (cluster not set up?)")
        return SlotMap(ranges)


def _parse_range(entry: object, asked_host: str) -> tuple[int, int, str]:
    """`[start, end, [host, port, ...], replicas...]`."""
    bad = ValueError(f"CLUSTER SLOTS: unexpected entry {entry!r}")
    if not isinstance(entry, list) or len(entry) < 3 or not isinstance(entry[2], list) or len(entry[2]) < 2:
        raise bad
    start, end, (host, port, *_) = entry[0], entry[1], entry[2]
    if not all(isinstance(n, int) and 0 <= n < SLOTS for n in (start, end)) or not isinstance(port, int):
        raise bad
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        raise bad
    return start, end, address(host if host not in ("", "?") else asked_host, port)


@dataclass(frozen=True)
class Redirect:
    """MOVED (the slot is served elsewhere for good) or ASK (it is moving, and this key is
    already there: ask once, preceded by ASKING)."""

    address: str
    ask: bool


def redirect(reply: object) -> Redirect | None:
    """The redirect a reply is, if any (redis-py parses both into AskError, MOVED a subclass)."""
    if not isinstance(reply, AskError):
        return None
    return Redirect(address(str(reply.host), int(reply.port)), ask=not isinstance(reply, MovedError))


def with_asking(commands: tuple[Args, ...], asking: bool) -> tuple[Args, ...]:
    """`commands` preceded by ASKING, which lets the next command reach a slot being imported."""
    return (("ASKING",), *commands) if asking else commands


M = TypeVar("M")


class Topology(Generic[M]):
    """What one cluster node knows of its cluster: the slot map (None until read, and again
    after a redirect or a master that stopped answering) and the masters met so far, each made
    on first use by `make(address)`."""

    def __init__(self, seed: Seed, make: Callable[[str], M]) -> None:
        self.seed = seed
        self.make = make
        self.slots: SlotMap | None = None
        self.masters: dict[str, M] = {}

    def master(self, address: str) -> M:
        if address not in self.masters:
            self.masters[address] = self.make(address)
        return self.masters[address]

    def known_master_of(self, resource: str) -> str | None:
        return None if self.slots is None else self.slots.master(slot_of(resource))

    def to_ask_for_slots(self) -> list[str]:
        """Where the slot map is read from: the masters known so far, then the seed."""
        known = list(self.masters)
        return known + ([self.seed.address] if self.seed.address not in known else [])

    def learn(self, slots: SlotMap, resource: str) -> str | None:
        """Keeps the map read; the master of `resource` in it."""
        self.slots = slots
        return slots.master(slot_of(resource))

    def forget_slots(self) -> None:
        self.slots = None

    def forget_master(self, address: str) -> M | None:
        """A master that stopped answering (maybe failed over): the next call reads the map
        again, and not from this master first (a partitioned one would eat that call's time)."""
        self.slots = None
        return self.masters.pop(address, None)

    def follow(self, to: Redirect, redirects: int) -> str | None:
        """Where a redirected request goes next (None: too many redirects). MOVED means the map
        is stale: it is read again on the next call."""
        if redirects >= MAX_REDIRECTS:
            return None
        if not to.ask:
            self.forget_slots()
        return to.address
