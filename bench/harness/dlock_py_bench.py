"""dlock Python client (python/, package dlock-client) contender for `make bench`: runs one
scenario, prints one JSON line. Same CLI and outputs as pottery_bench.py and prl_bench.py.

Usage: python dlock_py_bench.py --nodes URL,URL --scenario latency|throughput|contention|extend --n N
       --concurrency C --duration-ms D --prefix P
"""

import argparse
import json
import threading
import time
from collections.abc import Callable

from dlock import LockManager


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", required=True)
    p.add_argument("--scenario", default="latency")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration-ms", type=int, default=2000)
    p.add_argument("--prefix", default="dlockpy")
    return p.parse_args()


def run_threads(count: int, target: Callable[[int], None]) -> float:
    start = time.monotonic()
    threads = [threading.Thread(target=target, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.monotonic() - start


def cycle(locks: LockManager, name: str) -> None:
    """One acquire + release; try_lock raises if the lock is not acquired."""
    locks.try_lock(name, ttl=10.0).release()


def contention(locks: LockManager, a: argparse.Namespace) -> dict:
    """Every thread takes the same lock (queued on the nodes), holds it 1 ms, releases."""
    waits: list = []
    deadline = time.monotonic() + a.duration_ms / 1000

    def contend(_: int) -> None:
        while time.monotonic() < deadline:
            start = time.perf_counter_ns()
            lock = locks.lock(f"{a.prefix}:contended", ttl=10.0, wait=60.0)
            waits.append((time.perf_counter_ns() - start) // 1000)
            time.sleep(0.001)
            lock.release()

    seconds = run_threads(a.concurrency, contend)
    return {"latencies_us": waits, "ops": len(waits), "seconds": seconds}


def throughput(locks: LockManager, a: argparse.Namespace) -> dict:
    ops = [0] * a.concurrency
    deadline = time.monotonic() + a.duration_ms / 1000

    def run(t: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            cycle(locks, f"{a.prefix}:{t}:{i}")
            ops[t] += 1
            i += 1

    seconds = run_threads(a.concurrency, run)
    return {"ops": sum(ops), "seconds": seconds}


def extend(locks: LockManager, a: argparse.Namespace) -> dict:
    lock = locks.try_lock(f"{a.prefix}:extended", ttl=10.0)
    samples = []
    for _ in range(a.n):
        start = time.perf_counter_ns()
        lock.extend(10.0)
        samples.append((time.perf_counter_ns() - start) // 1000)
    lock.release()
    return {"latencies_us": samples}


def latency(locks: LockManager, a: argparse.Namespace) -> dict:
    samples = []
    for i in range(a.n):
        start = time.perf_counter_ns()
        cycle(locks, f"{a.prefix}:{i}")
        samples.append((time.perf_counter_ns() - start) // 1000)
    return {"latencies_us": samples}


def main() -> None:
    a = parse_args()
    scenarios = {"contention": contention, "throughput": throughput, "extend": extend, "latency": latency}
    if a.scenario not in scenarios:
        raise SystemExit(f"unknown scenario {a.scenario!r}")
    # A generous per-node timeout: the benchmark measures speed, not failure detection, and a
    # loaded 2-core machine must not turn a slow reply into a "down" node.
    with LockManager([u for u in a.nodes.split(",") if u], timeout=0.5) as locks:
        print(json.dumps(scenarios[a.scenario](locks, a)))


if __name__ == "__main__":
    main()
