"""python-redis-lock contender for `make bench` (scenarios.py runs the scenarios).

python-redis-lock is a single-node lock (SET NX EX; a waiter blocks in BLPOP on a signal list and
each release pushes one signal, so it wakes one waiter per release). Given more than one node URL
it exits non-zero.
"""

import sys

import redis_lock
from redis import BlockingConnectionPool, Redis

import scenarios
from scenarios import Release


class PythonRedisLock:
    def __init__(self, urls: list[str], threads: int) -> None:
        if len(urls) != 1:
            sys.exit(f"python-redis-lock is single-node only: got {len(urls)} node URLs, give exactly one")
        # One connection per thread (a waiter holds its connection while blocked in BLPOP), plus a spare.
        pool = BlockingConnectionPool.from_url(urls[0], max_connections=max(threads, 1) + 1, timeout=60)
        self.conn = Redis(connection_pool=pool)

    def cycle(self, key: str) -> None:
        lock = redis_lock.Lock(self.conn, key, expire=10)
        if not lock.acquire(blocking=False):
            raise RuntimeError(f"not acquired: {key}")
        lock.release()

    def wait_for(self, key: str) -> Release:
        lock = redis_lock.Lock(self.conn, key, expire=10)
        lock.acquire(blocking=True)
        return lock.release

    def hold(self, key: str, extensions: int) -> tuple[Release, Release]:
        lock = redis_lock.Lock(self.conn, key, expire=10)
        if not lock.acquire(blocking=False):
            raise RuntimeError(f"not acquired: {key}")
        return (lambda: lock.extend(10)), lock.release


def main() -> None:
    a = scenarios.parse_args("prl")
    scenarios.run(PythonRedisLock(scenarios.node_urls(a), a.concurrency), a)


if __name__ == "__main__":
    main()
