"""Growth curve (b): handoff latency and memory per waiter at 1 .. 10,000 parked waiters, all on one
resource, and spread over min(waiters, 1000) resources (waiters / resources each).

Each measurement runs on a fresh redis-server. Every resource gets a holder on a connection of its
own, then every waiter parks with `DLOCK.ACQUIRE res:<r> <owner> 600000 WAIT 0` on its own
connection; memory per waiter is the INFO used_memory growth over the parking divided by the
waiters (read after 4.5 s idle, once Redis has trimmed the query buffers of idle clients, as
bench/waiter_memory.py does; meanwhile a control connection PINGs, for the round trip a client
sees with that many connections open, idle and then parked). A handoff: the holder of a resource
sends DLOCK.RELEASE; the time from that send to the grant reply arriving on one of the resource's
waiters is the sample. The old holder then parks again at the tail, so the queue keeps its length,
and the new holder releases next time that resource comes round (resources are taken in turn). One
epoll selector watches every connection: a reply anywhere else is an error, not a sample. The
server's own time per RELEASE (the handoff included) and per waiting ACQUIRE (its parking and its
grant's reply) over the handoffs come from INFO commandstats.
"""

import os
import resource
import selectors
import time

from scale_resp import Conn, command_usec, info_field, median, percentile, used_memory, wait_until

TTL_MS = 600_000
IDLE_S = 4.5  # clientsCron trims the query buffer of a client idle for more than 2 whole seconds
SPREAD_OVER = 1_000


def fd_limit():
    """Raises the open-file limit to its hard limit; returns it (the server inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Layout:
    """Waiters on resources: per resource, the connections taking turns (holder first)."""

    def __init__(self, port, waiters, resources):
        self.waiters, self.resources = waiters, resources
        self.turns = [[Conn(port)] for _ in range(resources)]
        for i in range(waiters):
            self.turns[i % resources].append(Conn(port))
        self.owner = {id(c): os.urandom(16).hex() for q in self.turns for c in q}
        self.where = {c.sock.fileno(): r for r, q in enumerate(self.turns) for c in q}

    def all_conns(self):
        return [c for q in self.turns for c in q]

    def hold_all(self):
        for r, queue in enumerate(self.turns):
            if queue[0].call("DLOCK.ACQUIRE", f"res:{r}", self.owner[id(queue[0])], TTL_MS) is None:
                raise RuntimeError(f"res:{r} not granted to its holder")

    def park(self, r, conn):
        conn.send("DLOCK.ACQUIRE", f"res:{r}", self.owner[id(conn)], TTL_MS, "WAIT", 0)

    def park_all(self):
        for r, queue in enumerate(self.turns):
            for conn in queue[1:]:
                self.park(r, conn)


def handoff(layout, sel, r):
    """Releases resource r; returns µs from the RELEASE sent to a waiter's grant received."""
    queue = layout.turns[r]
    holder = queue.pop(0)
    began = time.perf_counter_ns()
    holder.send("DLOCK.RELEASE", f"res:{r}", layout.owner[id(holder)])
    granted_at, released = None, None
    while granted_at is None or released is None:
        ready = sel.select(timeout=10)
        if not ready:
            raise TimeoutError(f"no grant on res:{r}")
        for key, _ in ready:
            conn = key.data
            if conn is holder:
                released = conn.reply()
            elif layout.where[conn.sock.fileno()] == r and granted_at is None:
                granted_at = time.perf_counter_ns()
                grantee = conn
                if not isinstance(conn.reply(), int):
                    raise RuntimeError(f"res:{r}: a waiter was answered without a grant")
            else:
                raise RuntimeError(f"unexpected reply on a connection of res:{layout.where[conn.sock.fileno()]}")
    if released != 1:
        raise RuntimeError(f"res:{r}: RELEASE answered {released!r}")
    queue.remove(grantee)
    queue.insert(0, grantee)
    queue.append(holder)
    layout.park(r, holder)
    return (granted_at - began) / 1000


def ping_for(conn, seconds):
    """PING round trips (µs) on `conn` for `seconds`, one every half millisecond."""
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.perf_counter_ns()
        conn.call("PING")
        out.append((time.perf_counter_ns() - began) / 1000)
        time.sleep(0.0005)
    return out


def park_and_weigh(ctl, layout, blocked):
    """Parks every waiter; (bytes per waiter, PINGs with the connections idle, PINGs with the
    waiters parked). The PINGs fill the waits for Redis to trim idle clients' query buffers."""
    idle = ping_for(ctl, IDLE_S)
    before = used_memory(ctl)
    layout.park_all()
    wait_until(blocked, 60, f"{layout.waiters} waiters parked")
    parked = ping_for(ctl, IDLE_S)
    return (used_memory(ctl) - before) / layout.waiters, idle, parked


def measure(start_server, waiters, resources, handoffs):
    """One fresh server: bytes per waiter, handoff µs, server µs per RELEASE and per waiting
    ACQUIRE, PING µs with the connections idle and with the waiters parked."""
    server, ctl, port = start_server("--maxclients", str(waiters + resources + 100))
    try:
        ctl.call("CONFIG", "SET", "dlock.max-waiters", waiters + 10)
        layout = Layout(port, waiters, resources)
        layout.hold_all()

        def blocked():
            return info_field(ctl, "clients", "blocked_clients") == waiters

        per_waiter, idle, parked = park_and_weigh(ctl, layout, blocked)
        sel = selectors.DefaultSelector()
        for conn in layout.all_conns():
            sel.register(conn.sock, selectors.EVENT_READ, conn)
        ctl.call("CONFIG", "RESETSTAT")
        samples = []
        for k in range(handoffs):
            samples.append(handoff(layout, sel, k % resources))
            wait_until(blocked, 10, "the old holder parked again")
        stats = [command_usec(ctl, [name]) for name in ("dlock.release", "dlock.acquire")]
        sel.close()
        for conn in layout.all_conns():
            conn.close()
        server_us = [usec / calls for calls, usec in stats]
        return {"bytes": per_waiter, "us": samples, "server": server_us, "idle": idle, "parked": parked}
    finally:
        server.kill()
        server.wait()


def run(start_server, counts, handoffs, rounds):
    """Both layouts at every count: {layout: [row per count]}; counts the fd limit cannot hold
    are skipped with a notice."""
    limit = fd_limit()
    layouts = {"one resource": lambda w: 1, "spread": lambda w: min(w, SPREAD_OVER)}
    got = {name: {} for name in layouts}
    for r in range(rounds):
        print(f"bench-scale: waiters, round {r + 1}/{rounds}")
        for name in layouts if r % 2 == 0 else reversed(list(layouts)):
            for waiters in counts:
                resources = layouts[name](waiters)
                if waiters + resources + 200 > limit:
                    print(f"  {waiters} waiters skipped: open-file limit {limit} (ulimit -n) too low")
                    continue
                one = measure(start_server, waiters, resources, handoffs)
                cell = got[name].setdefault(waiters, {"resources": resources})
                for field, value in one.items():
                    cell.setdefault(field, []).append(value)
                print(
                    f"  {name:12} {waiters:>6} waiters on {resources:>4} resources: {one['bytes']:8.0f} B/waiter, "
                    f"handoff p50 {median(one['us']):5.0f} µs, p99 {percentile(one['us'], 99):5.0f} µs, "
                    f"server µs per RELEASE {one['server'][0]:.1f}, per waiting ACQUIRE {one['server'][1]:.1f}, "
                    f"PING p99 idle {percentile(one['idle'], 99):.0f} µs, parked {percentile(one['parked'], 99):.0f} µs"
                )
    return {name: [summary(w, cell) for w, cell in per.items()] for name, per in got.items()}


def summary(waiters, cell):
    """Medians over the rounds (the largest handoff of all rounds for the maximum)."""
    return {
        "waiters": waiters,
        "resources": cell["resources"],
        "bytes_per_waiter": median(cell["bytes"]),
        "p50_us": median([percentile(run, 50) for run in cell["us"]]),
        "p99_us": median([percentile(run, 99) for run in cell["us"]]),
        "max_us": max(max(run) for run in cell["us"]),
        "release_server_us": median([s[0] for s in cell["server"]]),
        "park_server_us": median([s[1] for s in cell["server"]]),
        "ping_idle_p99_us": median([percentile(run, 99) for run in cell["idle"]]),
        "ping_parked_p99_us": median([percentile(run, 99) for run in cell["parked"]]),
        "samples": sum(len(run) for run in cell["us"]),
    }
