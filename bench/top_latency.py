#!/usr/bin/env python3
"""How long `dlock top` blocks a node: one held lock among KEYS plain keys, `dlock top --once
--json` run RUNS times. Per DLOCK.TOP call, the server's own time from SLOWLOG (every call
logged: slowlog-log-slower-than 0); and the round trip of a PING loop on another connection
while top runs, against the same loop without it. Also one DLOCK.TOP step at the largest COUNT
(10000), the most any single call may scan.

usage: top_latency.py MODULE_PATH DLOCK_BINARY [KEYS] [RUNS]   (standard library only)
"""
import os, socket, subprocess, sys, tempfile, threading, time

from resp_util import command, resp, start_server


def read(f):
    """One RESP2 reply from a buffered socket file, parsed (arrays as lists)."""
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b"-"):
        return rest.decode()
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read(f) for _ in range(n)]
    raise ValueError(line)


def call(conn, *args):
    sock, f = conn
    sock.sendall(resp(*args))
    return read(f)


def ping_loop(port, stop, samples):
    sock = socket.create_connection(("127.0.0.1", port))
    conn = (sock, sock.makefile("rb"))
    while not stop.is_set():
        t = time.perf_counter()
        call(conn, "PING")
        samples.append((time.perf_counter() - t) * 1e6)


def pings_while(port, work):
    """PING round trips (µs) on their own connection while `work()` runs."""
    stop, samples = threading.Event(), []
    thread = threading.Thread(target=ping_loop, args=(port, stop, samples))
    thread.start()
    try:
        work()
    finally:
        stop.set()
        thread.join()
    return samples


def top_calls(conn):
    """The server time (µs) of each DLOCK.TOP call in the slowlog, which is then reset."""
    entries = call(conn, "SLOWLOG", "GET", "100000")
    call(conn, "SLOWLOG", "RESET")
    return [e[2] for e in entries if e[3] and e[3][0].upper() == b"DLOCK.TOP"]


def fill(conn, keys):
    for start in range(0, keys, 1000):
        pairs = []
        for i in range(start, min(keys, start + 1000)):
            pairs += ["plain:%d" % i, "x"]
        call(conn, "MSET", *pairs)
    call(conn, "DLOCK.ACQUIRE", "the-held-lock", "holder", 3_600_000)


def main():
    module, dlock = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    keys = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    with tempfile.TemporaryDirectory() as d:
        server, sock, port = start_server(module, d)
        try:
            conn = (sock, sock.makefile("rb"))
            fill(conn, keys)
            call(conn, "CONFIG", "SET", "slowlog-log-slower-than", "0")
            call(conn, "CONFIG", "SET", "slowlog-max-len", "100000")
            env = dict(os.environ, DLOCK_NODES="redis://127.0.0.1:%d" % port, DLOCK_TIMEOUT="1s")
            report(conn, port, dlock, env, keys, runs)
        finally:
            server.kill()
            server.wait()


def report(conn, port, dlock, env, keys, runs):
    times, calls, walls, during, found = [], 0, [], [], None
    baseline = pings_while(port, lambda: time.sleep(2))
    for _ in range(runs):
        call(conn, "SLOWLOG", "RESET")
        t = time.perf_counter()
        out = []
        during += pings_while(port, lambda: out.append(subprocess.run(
            [dlock, "top", "--once", "--json"], env=env, capture_output=True, check=True).stdout))
        walls.append((time.perf_counter() - t) * 1000)
        step = top_calls(conn)
        calls, times = len(step), times + step
        found = b'"the-held-lock"' in out[0]
    call(conn, "SLOWLOG", "RESET")
    call(conn, "DLOCK.TOP", "COUNT", "10000")
    biggest = max(top_calls(conn))
    pct = lambda v, p: sorted(v)[min(len(v) - 1, int(len(v) * p))]
    print("keys: %d plain + 1 held lock; %d runs of `dlock top --once --json`" % (keys, runs))
    print("held lock listed: %s" % found)
    print("DLOCK.TOP calls per run: %d (COUNT 1000 each)" % calls)
    print("DLOCK.TOP call, server time (SLOWLOG): p50 %d us, p99 %d us, max %d us" % (
        pct(times, 0.5), pct(times, 0.99), max(times)))
    print("one DLOCK.TOP COUNT 10000 step (the largest allowed): %d us" % biggest)
    print("dlock top wall time per run: median %.1f ms, max %.1f ms" % (pct(walls, 0.5), max(walls)))
    print("PING round trip without top: p50 %.0f us, p99 %.0f us, max %.0f us (%d pings)" % (
        pct(baseline, 0.5), pct(baseline, 0.99), max(baseline), len(baseline)))
    print("PING round trip during top:  p50 %.0f us, p99 %.0f us, max %.0f us (%d pings)" % (
        pct(during, 0.5), pct(during, 0.99), max(during), len(during)))


if __name__ == "__main__":
    main()
