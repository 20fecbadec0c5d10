"""Growth curve (a): one acquire+release on a fresh key, and bytes per held lock, at 10^3 .. 10^6
live locks; DLOCK.ACQUIRE + DLOCK.RELEASE next to SET NX PX + the compare-and-delete script.

Each side grows its own keyspace from empty (FLUSHALL first) through the sizes: fill to the next
size with pipelined writes (TTL 1 h, distinct keys `lock:<n>`, one 32-hex-char owner), read
INFO used_memory, then time `samples` sequential pairs on fresh keys on one connection (wall
time per pair, and the server's own time per pair from INFO commandstats). The order of the two
sides alternates from round to round; each figure is the median of the rounds' (a burst of other
work on the machine spoils one round, not the result).
"""

import time

from resp_util import resp
from scale_resp import Conn, command_usec, median, percentile, used_memory

TTL_MS = 3_600_000
CHUNK = 1_000
RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class Side:
    """How one contender holds a lock: the fill write, the sampled pair, its commandstats names."""

    def __init__(self, name, hold, pair, stats):
        self.name, self.hold, self.pair, self.stats = name, hold, pair, stats


def sides(ctl, owner):
    sha = ctl.call("SCRIPT", "LOAD", RELEASE_SCRIPT).decode()
    dlock = Side(
        "dlock",
        lambda key: resp("DLOCK.ACQUIRE", key, owner, TTL_MS),
        (
            lambda key: ("DLOCK.ACQUIRE", key, owner, TTL_MS),
            lambda key: ("DLOCK.RELEASE", key, owner),
        ),
        ("dlock.acquire", "dlock.release"),
    )
    setnx = Side(
        "SET NX PX",
        lambda key: resp("SET", key, owner, "PX", TTL_MS),
        (
            lambda key: ("SET", key, owner, "NX", "PX", TTL_MS),
            lambda key: ("EVALSHA", sha, 1, key, owner),
        ),
        ("set", "evalsha"),
    )
    return [dlock, setnx]


def fill(port, side, start, stop):
    """Holds keys lock:start .. lock:stop-1, pipelined CHUNK at a time on a connection of its own
    (closed afterwards, so its buffers are not counted)."""
    conn = Conn(port)
    for low in range(start, stop, CHUNK):
        high = min(stop, low + CHUNK)
        payload = b"".join(side.hold(f"lock:{i}") for i in range(low, high))
        conn.pipeline(payload, high - low)
    conn.close()


def sample_pairs(ctl, side, samples, tag):
    """Wall time (µs) of each acquire+release pair on fresh keys, and server µs per pair."""
    acquire, release = side.pair
    ctl.call("CONFIG", "RESETSTAT")
    wall = []
    for i in range(samples):
        key = f"fresh:{tag}:{i}"
        began = time.perf_counter_ns()
        granted = ctl.call(*acquire(key))
        released = ctl.call(*release(key))
        wall.append((time.perf_counter_ns() - began) / 1000)
        if granted is None or released != 1:
            raise RuntimeError(f"{side.name}: pair on {key} answered {granted!r}, {released!r}")
    return wall, command_usec(ctl, side.stats)[1] / samples


def grow(port, ctl, side, sizes, samples, round_no):
    """One side from an empty keyspace through every size: {size: (bytes/lock, wall, server)}."""
    ctl.call("FLUSHALL", "SYNC")
    base = used_memory(ctl)
    held, out = 0, {}
    for size in sizes:
        began = time.monotonic()
        fill(port, side, held, size)
        held = size
        per_lock = (used_memory(ctl) - base) / size
        wall, server = sample_pairs(ctl, side, samples, f"{round_no}:{size}")
        out[size] = (per_lock, wall, server)
        print(
            f"  {side.name:9} {size:>9} locks: {per_lock:6.1f} B/lock, pair p50 "
            f"{median(wall):5.0f} µs, server {server:.2f} µs/pair (fill {time.monotonic() - began:.1f} s)"
        )
    return out


def run(port, ctl, owner, sizes, samples, rounds):
    """The growth curves of both sides: a dict per side name, per size."""
    both = sides(ctl, owner)
    got = {s.name: {n: {"bytes": [], "wall": [], "server": []} for n in sizes} for s in both}
    for r in range(rounds):
        print(f"bench-scale: locks, round {r + 1}/{rounds}")
        for side in both if r % 2 == 0 else reversed(both):
            for size, (per_lock, wall, server) in grow(port, ctl, side, sizes, samples, r).items():
                cell = got[side.name][size]
                cell["bytes"].append(per_lock)
                cell["wall"].append(wall)
                cell["server"].append(server)
    ctl.call("FLUSHALL", "SYNC")
    return {name: [summary(size, cell) for size, cell in per_size.items()] for name, per_size in got.items()}


def summary(size, cell):
    return {
        "locks": size,
        "bytes_per_lock": median(cell["bytes"]),
        "p50_us": median([percentile(wall, 50) for wall in cell["wall"]]),
        "p99_us": median([percentile(wall, 99) for wall in cell["wall"]]),
        "server_us": median(cell["server"]),
        "samples": sum(len(wall) for wall in cell["wall"]),
    }
