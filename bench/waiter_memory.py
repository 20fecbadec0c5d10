#!/usr/bin/env python3
"""Memory per queued waiter: N clients parked by DLOCK.ACQUIRE ... WAIT 0 on one lock, against
N clients parked by BLPOP on one list (Redis's own blocked clients), each measured on a fresh
redis-server with the module loaded, from INFO memory's used_memory. The difference is what
dlock's queue adds per waiter on top of what any blocked client costs.

usage: waiter_memory.py MODULE_PATH [N]   (standard library only)
"""
import os, socket, sys, tempfile, time

from resp_util import command, resp, start_server








def used_memory(sock):
    info = command(sock, "INFO", "memory").decode()
    return int(next(l.split(":")[1] for l in info.split("\r\n") if l.startswith("used_memory:")))


def waiters(sock, key):
    return command(sock, "DLOCK.WAITERS", key).split(b"\r\n")[0]


def measure(module, n, park):
    with tempfile.TemporaryDirectory() as d:
        server, ctl, port = start_server(module, d, "--maxclients", str(n + 100))
        try:
            command(ctl, "DLOCK.ACQUIRE", "lock", "holder", 600000)
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
            for c in clients:
                command(c, "PING")
            time.sleep(3.0)  # idle query buffers are trimmed after 2 s (clientsCron)
            before = used_memory(ctl)
            for i, c in enumerate(clients):
                c.sendall(park(i))
            time.sleep(3.0)
            after = used_memory(ctl)
            blocked = command(ctl, "INFO", "clients").decode()
            count = int(next(l.split(":")[1] for l in blocked.split("\r\n") if l.startswith("blocked_clients:")))
            assert count == n, f"{count} of {n} parked"
            return (after - before) / n
        finally:
            server.kill()
            server.wait()


def main():
    module = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds = []
    for r in range(4):  # alternate the order, keep the median
        order = ["dlock", "blpop"] if r % 2 == 0 else ["blpop", "dlock"]
        got = {}
        for name in order:
            park = (lambda i: resp("DLOCK.ACQUIRE", "lock", "w%d" % i, 60000, "WAIT", 0)) if name == "dlock" \
                else (lambda i: resp("BLPOP", "list", 0))
            got[name] = measure(module, n, park)
        rounds.append(got)
    med = lambda k: sorted(r[k] for r in rounds)[len(rounds) // 2]
    d, b = med("dlock"), med("blpop")
    print(f"waiters: {n} on one key, median of {len(rounds)} rounds (order alternated)")
    print(f"  DLOCK.ACQUIRE WAIT: {d:.0f} B per waiter")
    print(f"  BLPOP             : {b:.0f} B per waiter")
    print(f"  dlock's queue adds: {d - b:.0f} B per waiter ({d / b:.2f}x a BLPOP waiter)")


if __name__ == "__main__":
    main()
