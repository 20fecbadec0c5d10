"""A lock holder in a process of its own, for test_guarded.py to SIGSTOP past its lease.

    guarded_holder.py NODES TARGET WHERE

NODES: the lock's node URLs, comma-separated; TARGET: `redis` (WHERE: the data's Redis URL, the
write goes through the gate `report:gate`) or `postgres` (WHERE: a libpq DSN, the write is the
fenced UPDATE of docs/fencing.md). Prints its token, waits for a line on stdin (the test stops
and resumes it meanwhile), writes "stale" as its body, and prints what happened: `written`,
`stale lost=<bool>` (the gate refused it) or `refused` (the fence row refused it)."""

from __future__ import annotations

import sys

import psycopg
import redis

import dlock


def fenced_update(db: psycopg.Connection[tuple[object, ...]], token: int, body: str) -> bool:
    """The docs' PostgreSQL helper: written only if no larger token wrote before."""
    with db.transaction():
        cur = db.execute("UPDATE report SET body = %s, fence = %s WHERE id = 1 AND fence <= %s", (body, token, token))
        return cur.rowcount == 1


def main() -> None:
    nodes, target, where = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    with dlock.LockManager(nodes, timeout=0.5) as locks:
        lock = locks.try_lock("report", ttl=0.5)  # no watchdog: nothing renews it while stopped
        token = lock.token()  # committed when read (5 nodes), within its lease
        print(token, flush=True)
        sys.stdin.readline()
        if target == "postgres":
            with psycopg.connect(where) as db:
                print("written" if fenced_update(db, token, "stale") else "refused", flush=True)
            return
        try:
            lock.guarded(redis.Redis.from_url(where), "report:gate", "SET", "report", "stale")
            print("written", flush=True)
        except dlock.StaleToken:
            print(f"stale lost={lock.lost.is_set()}", flush=True)


if __name__ == "__main__":
    main()
