"""python-redis-lock contender for `make bench`: runs one scenario, prints one JSON line.

python-redis-lock is a single-node lock (SET NX EX; a waiter blocks in BLPOP on a signal list and
each release pushes one signal, so it wakes one waiter per release). Given more than one node URL
it exits non-zero.

Usage: python prl_bench.py --nodes URL --scenario latency|throughput|contention|extend --n N
       --concurrency C --duration-ms D --prefix P
"""
import argparse
import json
import sys
import threading
import time

import redis_lock
from redis import BlockingConnectionPool, Redis


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", required=True)
    p.add_argument("--scenario", default="latency")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration-ms", type=int, default=2000)
    p.add_argument("--prefix", default="prl")
    return p.parse_args()


def connect(nodes: str, threads: int) -> Redis:
    urls = [u for u in nodes.split(",") if u]
    if len(urls) != 1:
        sys.exit(f"python-redis-lock is single-node only: got {len(urls)} node URLs, give exactly one")
    # One connection per thread (a waiter holds its connection while blocked in BLPOP), plus one spare.
    pool = BlockingConnectionPool.from_url(urls[0], max_connections=max(threads, 1) + 1, timeout=60)
    return Redis(connection_pool=pool)


def run_threads(count: int, target) -> float:
    start = time.monotonic()
    threads = [threading.Thread(target=target, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.monotonic() - start


def cycle(conn: Redis, name: str) -> None:
    lock = redis_lock.Lock(conn, name, expire=10)
    if not lock.acquire(blocking=False):
        raise RuntimeError(f"not acquired: {name}")
    lock.release()


def contention(conn: Redis, a: argparse.Namespace) -> dict:
    waits: list = []
    deadline = time.monotonic() + a.duration_ms / 1000

    def contend(_: int) -> None:
        while time.monotonic() < deadline:
            lock = redis_lock.Lock(conn, f"{a.prefix}:contended", expire=10)
            start = time.perf_counter_ns()
            lock.acquire(blocking=True)
            waits.append((time.perf_counter_ns() - start) // 1000)
            time.sleep(0.001)
            lock.release()

    seconds = run_threads(a.concurrency, contend)
    return {"latencies_us": waits, "ops": len(waits), "seconds": seconds}


def throughput(conn: Redis, a: argparse.Namespace) -> dict:
    ops = [0] * a.concurrency
    deadline = time.monotonic() + a.duration_ms / 1000

    def run(t: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            cycle(conn, f"{a.prefix}:{t}:{i}")
            ops[t] += 1
            i += 1

    seconds = run_threads(a.concurrency, run)
    return {"ops": sum(ops), "seconds": seconds}


def extend(conn: Redis, a: argparse.Namespace) -> dict:
    lock = redis_lock.Lock(conn, f"{a.prefix}:extended", expire=10)
    lock.acquire(blocking=False)
    samples = []
    for _ in range(a.n):
        start = time.perf_counter_ns()
        lock.extend(10)
        samples.append((time.perf_counter_ns() - start) // 1000)
    lock.release()
    return {"latencies_us": samples}


def latency(conn: Redis, a: argparse.Namespace) -> dict:
    samples = []
    for i in range(a.n):
        start = time.perf_counter_ns()
        cycle(conn, f"{a.prefix}:{i}")
        samples.append((time.perf_counter_ns() - start) // 1000)
    return {"latencies_us": samples}


def main() -> None:
    a = parse_args()
    scenarios = {"contention": contention, "throughput": throughput, "extend": extend, "latency": latency}
    if a.scenario not in scenarios:
        sys.exit(f"unknown scenario {a.scenario!r}")
    conn = connect(a.nodes, a.concurrency)
    print(json.dumps(scenarios[a.scenario](conn, a)))


if __name__ == "__main__":
    main()
