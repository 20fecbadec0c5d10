#!/usr/bin/env python3
"""Memory per queued waiter: N clients parked by DLOCK.ACQUIRE ... WAIT 0 on one lock, against
N clients parked by BLPOP on one list (Redis's own blocked clients), each measured on a fresh
redis-server with the module loaded, from INFO memory's used_memory. The difference is what
dlock's queue adds per waiter on top of what any blocked client costs.

Where the bytes go: the allocator's own count of live bytes per size class (jemalloc's table in
MEMORY MALLOC-STATS) before and after the clients park, per waiter. Redis's blocked-module-client
machinery shows up as its allocations: two 16 KB reply buffers and two `client` structs.

usage: waiter_memory.py MODULE_PATH [N]   (standard library only; the server is $REDIS_SERVER,
else redis-server from the PATH)
"""

import os
import socket
import sys
import tempfile
import time

from resp_util import command, resp, start_server


def used_memory(sock):
    info = command(sock, "INFO", "memory").decode()
    return int(next(line.split(":")[1] for line in info.split("\r\n") if line.startswith("used_memory:")))


def server_version(sock):
    info = command(sock, "INFO", "server").decode()
    fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    name = "Valkey" if "valkey_version" in fields else "Redis"
    return f"{name} {fields.get('valkey_version', fields.get('redis_version', '?'))}"


def size_classes(sock):
    """Live bytes per jemalloc size class (small bins and large extents), from the first (merged)
    arena statistics only: newer servers print each arena's tables again after them."""
    text = command(sock, "MEMORY", "MALLOC-STATS").decode(errors="replace")
    live, in_table, table = {}, False, ""
    for line in text.splitlines():
        words = line.split()
        if "size" in words and "allocated" in words and words[0] in ("bins:", "large:"):
            if table == "large:" and words[0] == "bins:":
                break  # the next arena's tables
            in_table, table = True, words[0]
            continue
        if not in_table:
            continue
        if words and words[0].isdigit() and len(words) > 2 and words[2].isdigit():
            live[int(words[0])] = live.get(int(words[0]), 0) + int(words[2])
        elif words and words[0] == "---":
            continue
        else:
            in_table = False
    return live


def measure(module, n, park):
    """(bytes per waiter from used_memory, {size class: bytes per waiter}, server name)."""
    with tempfile.TemporaryDirectory() as d:
        server, ctl, port = start_server(module, d, "--maxclients", str(n + 100))
        try:
            command(ctl, "DLOCK.ACQUIRE", "lock", "holder", 600000)
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
            for c in clients:
                command(c, "PING")
            time.sleep(4.5)  # idle query buffers are trimmed once idle > 2 whole s (clientsCron)
            before, classes_before = used_memory(ctl), size_classes(ctl)
            for i, c in enumerate(clients):
                c.sendall(park(i))
            time.sleep(4.5)  # the same for the parked clients' query buffers
            after, classes_after = used_memory(ctl), size_classes(ctl)
            blocked = command(ctl, "INFO", "clients").decode()
            count = int(
                next(line.split(":")[1] for line in blocked.split("\r\n") if line.startswith("blocked_clients:"))
            )
            assert count == n, f"{count} of {n} parked"
            grown = {
                size: (classes_after.get(size, 0) - classes_before.get(size, 0)) / n
                for size in set(classes_before) | set(classes_after)
            }
            return (after - before) / n, grown, server_version(ctl)
        finally:
            server.kill()
            server.wait()


def park_dlock(i):
    return resp("DLOCK.ACQUIRE", "lock", f"{i:032x}", 60000, "WAIT", 0)


def park_blpop(_i):
    return resp("BLPOP", "list", 0)


def print_classes(name, grown):
    big = sorted((size, b) for size, b in grown.items() if abs(b) >= 16)
    rows = ", ".join(f"{b:.0f} B in {size} B blocks" for size, b in big)
    print(f"  {name} by allocator size class: {rows} (sum {sum(b for _, b in big):.0f} B)")


def main():
    module = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds, classes, version = [], {}, "?"
    for r in range(4):  # alternate the order, keep the median
        order = ["dlock", "blpop"] if r % 2 == 0 else ["blpop", "dlock"]
        got = {}
        for name in order:
            park = park_dlock if name == "dlock" else park_blpop
            got[name], classes[name], version = measure(module, n, park)
        rounds.append(got)

    def med(kind):
        return sorted(r[kind] for r in rounds)[len(rounds) // 2]

    d, b = med("dlock"), med("blpop")
    print(f"{version}: {n} waiters on one key, median of {len(rounds)} rounds (order alternated)")
    print(f"  DLOCK.ACQUIRE WAIT: {d:.0f} B per waiter")
    print(f"  BLPOP             : {b:.0f} B per waiter")
    print(f"  dlock's queue adds: {d - b:.0f} B per waiter ({d / b:.2f}x a BLPOP waiter)")
    print_classes("DLOCK.ACQUIRE WAIT", classes["dlock"])
    print_classes("BLPOP", classes["blpop"])


if __name__ == "__main__":
    main()
