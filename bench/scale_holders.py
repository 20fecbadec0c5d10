"""Growth curve (d): what one command costs on a resource with 1 .. 10,000 holders, and the stall
while thousands of leases end together with as many waiters queued (issue 35).

Owners are 256 bytes (the longest allowed), so that every comparison and copy is at its worst.

- Per command, at each holder count: a semaphore of LIMIT 10000 (and a read/write lock of as many
  readers) is filled with that many holders, pipelined; then, on a fresh CONFIG RESETSTAT, OPS
  calls of each command, one at a time, each on a holder picked at random: ACQUIRE (a renewal),
  EXTEND, FENCE (to the holder's own token), RELEASE then ACQUIRE (a holder leaving and a new one
  taking its place), STATUS (its default COUNT 100) and, on a replica, the APPLY effects those
  writes replicate. The server's own time per call is INFO commandstats' usec_per_call.
- The stall: a semaphore of 10,000 permits, K of them with leases ending in the same few
  milliseconds and the rest long, and K more clients queued with WAIT; a control connection PINGs
  every half millisecond from before the deadline until every waiter is granted. Reported: the
  largest PING round trip in that window, the time until the last waiter got its permit, and the
  slowest single ACQUIRE / RELEASE the server recorded (SLOWLOG, threshold 0).
- FORCERELEASE of the full 10,000-holder semaphore (what freeing a table costs).
"""

import os
import random
import selectors
import time

from resp_util import resp
from scale_resp import Conn, command_usec, info_field, median, now_ms, percentile, wait_until

OWNER_BYTES = 256
LIMIT = 10_000
TTL_MS = 600_000


RUN = os.urandom(8).hex().encode()  # owners differ from run to run, and are the same within one


def owner(i):
    """Owner i: 256 bytes (hex, as clients send, then padded)."""
    head = f"{i:08x}".encode() + RUN
    return head + b"o" * (OWNER_BYTES - len(head))


def kind_args(kind):
    return ["LIMIT", LIMIT] if kind == "semaphore" else ["SHARED"]


def fill(conn, key, kind, count, ttl_ms=TTL_MS, first=0):
    """`count` holders of `key` (owners first .. first+count), pipelined; their tokens."""
    tokens = []
    for low in range(first, first + count, 500):
        high = min(first + count, low + 500)
        payload = b"".join(resp("DLOCK.ACQUIRE", key, owner(i), ttl_ms, *kind_args(kind)) for i in range(low, high))
        tokens += conn.pipeline(payload, high - low)
    return tokens


def timed_ops(conn, key, kind, count, tokens, ops):
    """OPS calls of each command on random holders; {command: server µs per call}."""
    rng = random.Random(7)
    extra = count  # a fresh owner for each RELEASE-then-ACQUIRE
    conn.call("CONFIG", "RESETSTAT")
    for _ in range(ops):
        i = rng.randrange(count)
        conn.call("DLOCK.ACQUIRE", key, owner(i), TTL_MS, *kind_args(kind))
        conn.call("DLOCK.EXTEND", key, owner(i), TTL_MS)
        conn.call("DLOCK.FENCE", key, owner(i), tokens[i])
    for _ in range(ops // 10):  # apart: its ~30 KB replies would evict the others' data
        conn.call("DLOCK.STATUS", key)
    acquire_calls, acquire_us = command_usec(conn, ["dlock.acquire"])
    out = {"renew": acquire_us / acquire_calls}
    for name in ("extend", "fence", "status"):
        calls, usec = command_usec(conn, [f"dlock.{name}"])
        out[name] = usec / calls
    conn.call("CONFIG", "RESETSTAT")
    holding = list(range(count))  # who holds place i now
    for _ in range(ops):
        i = rng.randrange(count)
        if conn.call("DLOCK.RELEASE", key, owner(holding[i])) != 1:
            raise RuntimeError("a holder was not released")
        holding[i] = extra
        tokens[i] = conn.call("DLOCK.ACQUIRE", key, owner(extra), TTL_MS, *kind_args(kind))
        extra += 1
    for name in ("release", "acquire"):
        calls, usec = command_usec(conn, [f"dlock.{name}"])
        out[name] = usec / calls
    return out


def per_command(start_server, counts, ops):
    """{kind: [row per holder count]}: server µs per call of each command, and of the replica's
    APPLY."""
    rows = {"semaphore": [], "shared": []}
    for kind in rows:
        for count in counts:
            # A backlog that holds every effect of the run: the replica must apply them one by
            # one, not resynchronise from an RDB.
            master, ctl, port = start_server("--repl-backlog-size", "256mb")
            replica, rctl, _ = start_server("--replicaof", "127.0.0.1", str(port))
            try:
                wait_until(lambda: info_field(ctl, "replication", "connected_slaves") == 1, 10, "replica linked")
                key = f"{kind}:{count}"
                tokens = fill(ctl, key, kind, count)
                ctl.call("WAIT", 1, 10_000)
                rctl.call("CONFIG", "RESETSTAT")
                row = timed_ops(ctl, key, kind, count, tokens, ops)
                ctl.call("WAIT", 1, 10_000)
                calls, usec = command_usec(rctl, ["dlock.apply"])
                row["replica_apply"] = usec / max(calls, 1)
                row["holders"] = count
                rows[kind].append(row)
                print(
                    f"  {kind:9} {count:>6} holders: "
                    + ", ".join(f"{k} {v:.1f}" for k, v in row.items() if k != "holders")
                    + " µs/call (server)"
                )
            finally:
                for process in (replica, master):
                    process.kill()
                    process.wait()
    return rows


def ping_until(conn, done, timeout_s):
    """PING round trips (µs) every half millisecond until `done()`; (samples, seconds taken)."""
    out, began = [], time.monotonic()
    while not done():
        if time.monotonic() - began > timeout_s:
            raise TimeoutError("the waiters were not all granted")
        t = time.perf_counter_ns()
        conn.call("PING")
        out.append((time.perf_counter_ns() - t) / 1000)
        time.sleep(0.0005)
    return out, time.monotonic() - began


def stall(start_server, ending):
    """LIMIT 10000, `ending` leases ending together, `ending` waiters queued: the PINGs from
    before the deadline to the last grant, and the slowest command."""
    server, ctl, port = start_server("--maxclients", str(ending + 200), "--slowlog-log-slower-than", "0",
                                     "--slowlog-max-len", "100000")
    try:
        ctl.call("CONFIG", "SET", "dlock.max-waiters", ending + 10)
        fill(ctl, "pool", "semaphore", LIMIT - ending)
        deadline = now_ms() + 3_000 + 2 * ending  # after every waiter parked
        for low in range(0, ending, 250):
            high = min(ending, low + 250)
            payload = b"".join(
                resp("DLOCK.ACQUIRE", "pool", owner(LIMIT + i), deadline - now_ms(), "LIMIT", LIMIT)
                for i in range(low, high)
            )
            ctl.pipeline(payload, high - low)
        waiters = [Conn(port) for _ in range(ending)]
        for i, w in enumerate(waiters):
            w.send("DLOCK.ACQUIRE", "pool", owner(2 * LIMIT + i), TTL_MS, "WAIT", 0, "LIMIT", LIMIT)
        wait_until(lambda: info_field(ctl, "clients", "blocked_clients") == ending, 30, "waiters parked")
        ctl.call("SLOWLOG", "RESET")
        sel = selectors.DefaultSelector()
        for w in waiters:
            sel.register(w.sock, selectors.EVENT_READ, w)
        granted = []

        def all_granted():
            for key, _ in sel.select(timeout=0):
                granted.append(key.data.reply())
                sel.unregister(key.fileobj)
            return len(granted) == ending

        pings, _ = ping_until(ctl, all_granted, 60)
        last_grant_ms = now_ms() - deadline
        slow = ctl.call("SLOWLOG", "GET", 100_000)
        by_name = {}
        for entry in slow:
            name = entry[3][0].decode().lower()
            by_name[name] = max(by_name.get(name, 0), entry[2])
        for w in waiters:
            w.close()
        if any(not isinstance(g, int) for g in granted):
            raise RuntimeError("a waiter was answered without a permit")
        return {
            "ending": ending,
            "ping_max_us": max(pings),
            "ping_p99_us": percentile(pings, 99),
            "ping_p50_us": median(pings),
            "last_grant_after_deadline_ms": last_grant_ms,
            "slowest_us": by_name,
        }
    finally:
        server.kill()
        server.wait()


def force_release(start_server):
    """Server µs of one FORCERELEASE of a full 10,000-holder semaphore (median of 3)."""
    samples = []
    for _ in range(3):
        server, ctl, _ = start_server()
        try:
            fill(ctl, "pool", "semaphore", LIMIT)
            ctl.call("CONFIG", "RESETSTAT")
            ctl.call("DLOCK.FORCERELEASE", "pool")
            samples.append(command_usec(ctl, ["dlock.forcerelease"])[1])
        finally:
            server.kill()
            server.wait()
    return median(samples)


def run(start_server, counts, ops, endings):
    print("bench-scale: holders")
    out = {"per_command": per_command(start_server, counts, ops)}
    out["stall"] = []
    for ending in endings:
        row = stall(start_server, ending)
        print(
            f"  {ending} leases ending with {ending} waiters: PING max {row['ping_max_us'] / 1000:.2f} ms, "
            f"p99 {row['ping_p99_us'] / 1000:.2f} ms; slowest commands {row['slowest_us']} µs"
        )
        out["stall"].append(row)
    out["forcerelease_us"] = force_release(start_server)
    print(f"  FORCERELEASE of 10,000 holders: {out['forcerelease_us']} µs")
    return out
