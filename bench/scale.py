#!/usr/bin/env python3
"""`make bench-scale`: growth curves of dlock against the size of what it holds (issue 24, item 4).

  (a) one acquire+release and bytes per lock at 10^3 .. 10^6 live locks, next to SET NX PX and
      the compare-and-delete script (scale_locks.py);
  (b) handoff latency and memory per waiter at 1 .. 10,000 waiters, on one resource and spread
      over 1000 (scale_waiters.py);
  (c) the event-loop stall while 10^5 locks expire in the same millisecond, next to 10^5 SET keys
      with PXAT that millisecond (scale_expiry.py);
  (d) server time per command on one resource of 1 .. 10,000 holders (256-byte owners), the stall
      while 500 .. 2,000 leases end together with as many waiters, and freeing 10,000 holders
      (scale_holders.py, issue 35).

Writes the tables to stdout and, after a full run, into docs/bench/scale.md between its
`bench-scale` markers (bench/page.py); the raw figures to RESULTS_JSON (bench/scale-results.json
after a full run; scale_charts.py draws them). Standard library only.

usage: scale.py MODULE_PATH [--quick] [--out RESULTS_JSON] [--page docs/bench/scale.md]
"""

import argparse
import gc
import json
import os
import tempfile
import time

import scale_expiry
import scale_holders
import scale_locks
import scale_waiters
from page import DOCS, write_between
from resp_util import start_server
from scale_report import render
from scale_resp import Conn

FULL = {
    "sizes": (1_000, 10_000, 100_000, 1_000_000),
    "samples": 3_000,
    "lock_rounds": 3,
    "waiters": (1, 10, 100, 1_000, 10_000),
    "handoffs": 1_000,
    "waiter_rounds": 3,
    "expiring": 100_000,
    "expiry_rounds": 5,
    "holders": (1, 10, 100, 1_000, 10_000),
    "holder_ops": 500,
    "endings": (500, 1_000, 2_000),
}
QUICK = {
    "sizes": (1_000, 10_000),
    "samples": 500,
    "lock_rounds": 2,
    "waiters": (1, 10, 100),
    "handoffs": 50,
    "waiter_rounds": 1,
    "expiring": 10_000,
    "expiry_rounds": 2,
    "holders": (1, 100, 10_000),
    "holder_ops": 100,
    "endings": (500,),
}


def server_factory(module, directory):
    """start(*extra) -> (process, control Conn, port): a fresh redis-server with the module."""

    def start(*extra):
        process, sock, port = start_server(module, directory, *extra)
        sock.close()
        return process, Conn(port), port

    return start


def redis_version(ctl):
    text = ctl.call("INFO", "server").decode()
    return next(line.split(":", 1)[1] for line in text.split("\r\n") if line.startswith("redis_version:"))


def run_all(module, plan):
    owner = os.urandom(16).hex()  # what every dlock client sends: 128 random bits in hex
    results = {"plan": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()}}
    results["date"] = time.strftime("%Y-%m-%d %H:%M")
    results["load_before"] = os.getloadavg()
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as directory:
        start = server_factory(module, directory)
        process, ctl, port = start()
        try:
            results["redis_version"] = redis_version(ctl)
            results["locks"] = scale_locks.run(port, ctl, owner, plan["sizes"], plan["samples"], plan["lock_rounds"])
            results["expiry"] = scale_expiry.run(port, owner, plan["expiring"], plan["expiry_rounds"])
        finally:
            process.kill()
            process.wait()
        results["waiters"] = scale_waiters.run(start, plan["waiters"], plan["handoffs"], plan["waiter_rounds"])
        results["holders"] = scale_holders.run(start, plan["holders"], plan["holder_ops"], plan["endings"])
    results["minutes"] = (time.monotonic() - began) / 60
    results["load_after"] = os.getloadavg()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module")
    parser.add_argument("--quick", action="store_true", help="small sizes, for development")
    parser.add_argument("--out", help="raw figures (default: bench/scale-results.json; none after --quick)")
    parser.add_argument("--page", default=os.path.join(DOCS, "scale.md"), help="the page the tables go into")
    args = parser.parse_args()
    gc.disable()  # a collection over ~11,000 connections' objects would pause the client for ms
    results = run_all(os.path.abspath(args.module), QUICK if args.quick else FULL)
    # The committed figures are the page's (tests/docs checks they render to its tables): a quick
    # run writes them only where --out says.
    out = args.out or (None if args.quick else os.path.join(os.path.dirname(__file__), "scale-results.json"))
    if out:
        with open(out, "w") as f:
            json.dump(results, f, separators=(",", ":"))  # raw figures for the charts
    text = render(results)
    print("\n" + text)
    if args.quick:
        print(f"\n(a quick run: {args.page} left as it is)")
    else:
        write_between(args.page, "bench-scale", text)
        print(f"\nwrote the tables into {args.page}")


if __name__ == "__main__":
    main()
