"""The four `make bench` scenarios for the Python contenders, written once: each contender script
(pottery_bench.py, prl_bench.py, dlock_py_bench.py) supplies how to take and release its lock,
and this runs the scenario it was asked for and prints one JSON line (bench/src/external.rs
reads it). The scripts import it as a sibling module: Python puts a script's own folder first
on its path.

Usage: python <contender>_bench.py --nodes URL[,URL...] --scenario latency|throughput|contention|extend
       --n N --concurrency C --duration-ms D --prefix P
"""

import argparse
import json
import threading
import time
from collections.abc import Callable
from typing import Protocol

Release = Callable[[], None]


class Contender(Protocol):
    def cycle(self, key: str) -> None:
        """One uncontended acquire + release; raises if the lock is not acquired."""

    def wait_for(self, key: str) -> Release:
        """Blocks until `key` is held; returns how to release it."""

    def hold(self, key: str, extensions: int) -> tuple[Release, Release]:
        """Takes `key` to be extended `extensions` times: (extend, release)."""


def parse_args(default_prefix: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", required=True)
    p.add_argument("--scenario", default="latency", choices=sorted(SCENARIOS))
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration-ms", type=int, default=2000)
    p.add_argument("--prefix", default=default_prefix)
    return p.parse_args()


def node_urls(a: argparse.Namespace) -> list[str]:
    return [u for u in a.nodes.split(",") if u]


def run(contender: Contender, a: argparse.Namespace) -> None:
    print(json.dumps(SCENARIOS[a.scenario](contender, a)))


def run_threads(count: int, target: Callable[[int], None]) -> float:
    start = time.monotonic()
    threads = [threading.Thread(target=target, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.monotonic() - start


def micros_since(start_ns: int) -> int:
    return (time.perf_counter_ns() - start_ns) // 1000


def latency(c: Contender, a: argparse.Namespace) -> dict:
    samples = []
    for i in range(a.n):
        start = time.perf_counter_ns()
        c.cycle(f"{a.prefix}:{i}")
        samples.append(micros_since(start))
    return {"latencies_us": samples}


def throughput(c: Contender, a: argparse.Namespace) -> dict:
    ops = [0] * a.concurrency
    deadline = time.monotonic() + a.duration_ms / 1000

    def loop(t: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            c.cycle(f"{a.prefix}:{t}:{i}")
            ops[t] += 1
            i += 1

    seconds = run_threads(a.concurrency, loop)
    return {"ops": sum(ops), "seconds": seconds}


def contention(c: Contender, a: argparse.Namespace) -> dict:
    """Every thread takes the same lock, holds it 1 ms, releases; the waits are the samples."""
    waits: list[int] = []
    deadline = time.monotonic() + a.duration_ms / 1000

    def contend(_: int) -> None:
        while time.monotonic() < deadline:
            start = time.perf_counter_ns()
            release = c.wait_for(f"{a.prefix}:contended")
            waits.append(micros_since(start))
            time.sleep(0.001)
            release()

    seconds = run_threads(a.concurrency, contend)
    return {"latencies_us": waits, "ops": len(waits), "seconds": seconds}


def extend(c: Contender, a: argparse.Namespace) -> dict:
    extend_once, release = c.hold(f"{a.prefix}:extended", a.n)
    samples = []
    for _ in range(a.n):
        start = time.perf_counter_ns()
        extend_once()
        samples.append(micros_since(start))
    release()
    return {"latencies_us": samples}


SCENARIOS = {"latency": latency, "throughput": throughput, "contention": contention, "extend": extend}
