"""Growth curve (c): the event-loop stall while many locks expire in the same millisecond, next to
as many plain SET keys with PXAT that millisecond.

DLOCK.ACQUIRE takes a relative TTL only (docs/commands.md), so the locks are taken pipelined,
CHUNK at a time, each chunk's TTL computed just before it is sent as the common deadline minus
the client's clock; the spread of the deadlines the server actually set is read back with
PEXPIRETIME and reported. The SET keys all get `PXAT deadline`. From LEAD_MS before the deadline a
client sends PING after PING on its own connection (and DBSIZE every millisecond) until no key is
left: the PING round trips inside the window (deadline .. last key gone) show how long the event
loop stalls. Nothing reads the keys, so they go by Redis's active expiry alone (time-budgeted: a
slow cycle of up to 25 ms every 100 ms at hz 10, and 1 ms fast cycles between); a lookup of an
expired key would also delete it (passive expiry). Sides alternate, on a flushed keyspace each.
"""

import time

from resp_util import resp
from scale_resp import Conn, median, now_ms, percentile

CHUNK = 200
LEAD_MS = 300
FILL_US_PER_KEY = 20  # generous: the deadline must come after the fill and the read-back
TAIL_MS = 50
PLACEHOLDER = b"$1\r\n1\r\n"  # a TTL argument of 1, cut off and replaced by the real one


def fill(conn, side, owner, keys, deadline):
    for low in range(0, keys, CHUNK):
        high = min(keys, low + CHUNK)
        if side == "dlock":
            # Everything but the TTL is encoded first, so the TTL is as fresh as possible when sent.
            heads = [resp("DLOCK.ACQUIRE", f"exp:{i}", owner, 1)[: -len(PLACEHOLDER)] for i in range(low, high)]
            ttl = str(deadline - now_ms()).encode()
            tail = b"$%d\r\n%s\r\n" % (len(ttl), ttl)
            payload = tail.join(heads) + tail
        else:
            payload = b"".join(resp("SET", f"exp:{i}", owner, "PXAT", deadline) for i in range(low, high))
        conn.pipeline(payload, high - low)


def deadline_spread(conn, keys, deadline):
    """(earliest, latest) key expiry in ms relative to `deadline`, from PEXPIRETIME."""
    low, high = None, None
    for start in range(0, keys, 5_000):
        stop = min(keys, start + 5_000)
        times = conn.pipeline(b"".join(resp("PEXPIRETIME", f"exp:{i}") for i in range(start, stop)), stop - start)
        low = min(times) if low is None else min(low, *times)
        high = max(times) if high is None else max(high, *times)
    return low - deadline, high - deadline


def watch(conn, deadline, keys):
    """PINGs from LEAD_MS before the deadline until DBSIZE is 0: ([(ms, µs)], [(ms, keys)], gone)."""
    time.sleep(max(0, deadline - LEAD_MS - now_ms()) / 1000)
    pings, counts, gone = [], [], None
    next_count = 0
    while gone is None or now_ms() < deadline + gone + TAIL_MS:
        sent_ms = time.time_ns() / 1e6 - deadline
        began = time.perf_counter_ns()
        conn.call("PING")
        pings.append((sent_ms, (time.perf_counter_ns() - began) / 1000))
        if sent_ms >= next_count:
            left = conn.call("DBSIZE")
            counts.append((sent_ms, left))
            next_count = sent_ms + 1
            if left == 0 and sent_ms >= 0 and gone is None:
                gone = sent_ms
        if sent_ms > 60_000:
            raise TimeoutError(f"{keys} keys not expired a minute after their deadline")
    return pings, counts, gone


def one_side(port, side, owner, keys):
    conn = Conn(port)
    conn.call("FLUSHALL", "SYNC")
    deadline = now_ms() + keys * FILL_US_PER_KEY // 1000 + 1000
    fill(conn, side, owner, keys, deadline)
    spread = deadline_spread(conn, keys, deadline)
    if now_ms() > deadline - LEAD_MS:
        raise RuntimeError(f"{side}: filling {keys} keys took past the deadline's lead")
    pings, counts, gone = watch(conn, deadline, keys)
    conn.close()
    window = [us for ms, us in pings if 0 <= ms <= gone]
    before = [us for ms, us in pings if ms < 0]
    return {
        "spread_ms": spread,
        "gone_ms": gone,
        "max_us": max(window),
        "p99_us": percentile(window, 99),
        "pings": len(window),
        "before_p99_us": percentile(before, 99),
        "before_max_us": max(before),
        "timeline": timeline(pings, counts),
    }


def timeline(pings, counts):
    """Per millisecond since the deadline: the worst PING round trip (µs) and the keys left."""
    worst = {}
    for ms, us in pings:
        bucket = int(ms // 1)
        worst[bucket] = max(us, worst.get(bucket, 0))
    return {"ping": sorted(worst.items()), "keys": [(round(ms, 2), n) for ms, n in counts]}


def run(port, owner, keys, rounds):
    """Both sides in alternation: {side: {rounds: [...], summary}}."""
    got = {"dlock": [], "SET PXAT": []}
    for r in range(rounds):
        print(f"bench-scale: expiry of {keys} keys, round {r + 1}/{rounds}")
        for side in ("dlock", "SET PXAT") if r % 2 == 0 else ("SET PXAT", "dlock"):
            result = one_side(port, "dlock" if side == "dlock" else "set", owner, keys)
            got[side].append(result)
            print(
                f"  {side:8}: gone {result['gone_ms']:6.0f} ms after the deadline, PING max "
                f"{result['max_us'] / 1000:6.2f} ms, p99 {result['p99_us'] / 1000:5.2f} ms "
                f"(deadlines spread {result['spread_ms'][0]}..{result['spread_ms'][1]} ms)"
            )
    return {side: summary(keys, runs) for side, runs in got.items()}


def summary(keys, runs):
    return {
        "keys": keys,
        "rounds": len(runs),
        "max_ms": median([r["max_us"] for r in runs]) / 1000,
        "worst_max_ms": max(r["max_us"] for r in runs) / 1000,
        "p99_ms": median([r["p99_us"] for r in runs]) / 1000,
        "gone_ms": median([r["gone_ms"] for r in runs]),
        "before_p99_ms": median([r["before_p99_us"] for r in runs]) / 1000,
        "spread_ms": [min(r["spread_ms"][0] for r in runs), max(r["spread_ms"][1] for r in runs)],
        "timeline": runs[0]["timeline"],
    }
