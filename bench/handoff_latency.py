#!/usr/bin/env python3
"""Expiry handoff lateness: a holder takes the lock with a short TTL and never releases it (as a
crashed holder), a second client waits with DLOCK.ACQUIRE ... WAIT 0; how long after the holder's
deadline is the waiter granted? The deadline is taken as the holder's reply time plus the TTL
(on localhost the reply arrives within a fraction of a millisecond of the grant). Nothing else
touches the key: the handoff must come from the module's own timer, not from Redis's lazy or
background expiry (which, for comparison, is what a plain SET-NX lock waits for: the key's
expiry is measured the same way, polling EXISTS every millisecond). A semaphore row: of a
2-permit semaphore's holders one never releases (short TTL) and one stays; a waiter for a permit
is served when the first one's lease ends, while the key lives on (the module's timer watches
the earliest lease, not the key).

usage: handoff_latency.py MODULE_PATH [SAMPLES]   (standard library only)
"""
import os, socket, sys, tempfile, time

from resp_util import command, start_server


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    module = os.path.abspath(sys.argv[1])
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    ttl_ms = 50
    with tempfile.TemporaryDirectory() as d:
        server, holder, port = start_server(module, d)
        try:
            waiter = socket.create_connection(("127.0.0.1", port))
            dlock, setnx, permit = [], [], []
            for i in range(samples):
                key = "k%d" % i
                command(holder, "DLOCK.ACQUIRE", key, "crashed", ttl_ms)
                deadline = time.monotonic() + ttl_ms / 1000
                command(waiter, "DLOCK.ACQUIRE", key, "next", 10000, "WAIT", 0)
                dlock.append((time.monotonic() - deadline) * 1000)
                skey = "s%d" % i
                command(holder, "SET", skey, "crashed", "NX", "PX", ttl_ms)
                deadline = time.monotonic() + ttl_ms / 1000
                while command(waiter, "SET", skey, "next", "NX", "PX", 10000).startswith(b"$-1"):
                    time.sleep(0.001)
                setnx.append((time.monotonic() - deadline) * 1000)
                pkey = "p%d" % i
                command(holder, "DLOCK.ACQUIRE", pkey, "stays", 60000, "LIMIT", 2)
                command(holder, "DLOCK.ACQUIRE", pkey, "crashed", ttl_ms, "LIMIT", 2)
                deadline = time.monotonic() + ttl_ms / 1000
                command(waiter, "DLOCK.ACQUIRE", pkey, "next", 10000, "LIMIT", 2, "WAIT", 0)
                permit.append((time.monotonic() - deadline) * 1000)
        finally:
            server.kill()
            server.wait()
    print(f"expiry handoff, {samples} samples, TTL {ttl_ms} ms, ms after the holder's deadline:")
    rows = (
        ("DLOCK.ACQUIRE WAIT (module timer)", dlock),
        ("semaphore permit, LIMIT 2 WAIT", permit),
        ("SET NX polled every 1 ms", setnx),
    )
    for name, v in rows:
        print(f"  {name:34} p50 {percentile(v, 0.5):6.2f}  p99 {percentile(v, 0.99):6.2f}  max {max(v):6.2f}")


if __name__ == "__main__":
    main()
