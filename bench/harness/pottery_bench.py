"""pottery (Python Redlock) contender for `make bench`: runs one scenario, prints one JSON line.

Usage: python pottery_bench.py --nodes URL,URL --scenario latency|throughput|contention|extend --n N
       --concurrency C --duration-ms D --prefix P
"""
import argparse
import json
import threading
import time

from pottery import Redlock
from redis import Redis


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", required=True)
    p.add_argument("--scenario", default="latency")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration-ms", type=int, default=2000)
    p.add_argument("--prefix", default="pottery")
    a = p.parse_args()
    masters = frozenset(Redis.from_url(u) for u in a.nodes.split(","))

    def cycle(key: str) -> None:
        lock = Redlock(key=key, masters=masters, auto_release_time=10)
        if not lock.acquire(blocking=False):
            raise RuntimeError(f"not acquired: {key}")
        lock.release()

    if a.scenario == "contention":
        waits: list = []
        deadline = time.monotonic() + a.duration_ms / 1000

        def contend() -> None:
            while time.monotonic() < deadline:
                lock = Redlock(key=f"{a.prefix}:contended", masters=masters, auto_release_time=10)
                start = time.perf_counter_ns()
                lock.acquire()
                waits.append((time.perf_counter_ns() - start) // 1000)
                time.sleep(0.001)
                lock.release()

        start = time.monotonic()
        threads = [threading.Thread(target=contend) for _ in range(a.concurrency)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        print(json.dumps({"latencies_us": waits, "ops": len(waits), "seconds": time.monotonic() - start}))
    elif a.scenario == "extend":
        lock = Redlock(
            key=f"{a.prefix}:extended", masters=masters, auto_release_time=10, num_extensions=a.n + 1
        )
        lock.acquire()
        samples = []
        for _ in range(a.n):
            start = time.perf_counter_ns()
            lock.extend()
            samples.append((time.perf_counter_ns() - start) // 1000)
        lock.release()
        print(json.dumps({"latencies_us": samples}))
    elif a.scenario == "throughput":
        ops = [0] * a.concurrency
        deadline = time.monotonic() + a.duration_ms / 1000

        def run(t: int) -> None:
            i = 0
            while time.monotonic() < deadline:
                cycle(f"{a.prefix}:{t}:{i}")
                ops[t] += 1
                i += 1

        start = time.monotonic()
        threads = [threading.Thread(target=run, args=(t,)) for t in range(a.concurrency)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        print(json.dumps({"ops": sum(ops), "seconds": time.monotonic() - start}))
    else:
        samples = []
        for i in range(a.n):
            start = time.perf_counter_ns()
            cycle(f"{a.prefix}:{i}")
            samples.append((time.perf_counter_ns() - start) // 1000)
        print(json.dumps({"latencies_us": samples}))


if __name__ == "__main__":
    main()
