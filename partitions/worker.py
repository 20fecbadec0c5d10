"""A client process of the partition suite through the Python library (dlock, sync API).

The same mutex workload as the Rust worker (partitions/src/workloads/mutex.rs), with the same
arguments and the same JSON lines on stdout (partitions/src/history.rs), each flushed at once so
that a process SIGKILLed or SIGSTOPped has told what it did up to that moment. Over and over: take the lock, read
the register, hold, write a new unique value, release; the read and the write go through the gate
(DLOCK.GUARD with the lock's token) unless --bypass-gate.

Times are time.monotonic_ns(): clock_gettime(CLOCK_MONOTONIC) on Linux, the clock the Rust side
reads, so the events of every process order on one timeline. Run with the repository's venv
(python/.venv/bin/python), which has the dlock package installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import redis
from dlock import Lock, LockLost, LockManager
from redis.backoff import NoBackoff
from redis.retry import Retry

RESOURCE = "dlp:lock"
REGISTER = "dlp:register"
GATE = "dlp:gate"


def emit(process: int, kind: str, f: str, **fields: Any) -> None:
    """One event; fields that are None are left out, as serde's skip_serializing_if does."""
    event: dict[str, Any] = {
        "process": process,
        "type": kind,
        "f": f,
        "mono_ns": time.monotonic_ns(),
        "wall_ms": time.time_ns() // 1_000_000,
    }
    event.update({k: v for k, v in fields.items() if v is not None})
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--id", type=int, required=True)
    # The lock's nodes, URLs separated by ";" (as the Rust worker takes them).
    p.add_argument("--nodes", required=True)
    p.add_argument("--register", required=True)
    p.add_argument("--ttl-ms", type=int, required=True)
    p.add_argument("--hold-ms", type=int, required=True)
    p.add_argument("--secs", type=int, required=True)
    p.add_argument("--bypass-gate", action="store_true")
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--replicas", type=int, default=0)
    return p.parse_args(argv)


def manager(args: argparse.Namespace) -> LockManager:
    """The Rust worker's settings: 100 ms per node call, replica acknowledgement only when asked
    (then within 200 ms)."""
    nodes = [n for n in args.nodes.split(";") if n]
    if args.replicas == 0:
        return LockManager(nodes, timeout=0.1, replica_ack="off")
    return LockManager(nodes, timeout=0.1, replica_ack=args.replicas, ack_timeout=0.2)


def acquire(args: argparse.Namespace, locks: LockManager) -> Lock | None:
    """One lock() call (TTL, wait 2 TTLs). A call that never returns shows in the history as an
    invocation without completion: the checker's lost waiter."""
    emit(args.id, "invoke", "acquire")
    ttl = args.ttl_ms / 1000
    try:
        lock = locks.lock(RESOURCE, ttl=ttl, wait=2 * ttl)
    except Exception as e:  # every failure of lock() is a fail: nothing is held
        emit(args.id, "fail", "acquire", error=f"{type(e).__name__}: {e}")
        return None
    validity_ms = int(lock.validity * 1000)
    emit(args.id, "ok", "acquire", token=lock.token(), validity_ms=validity_ms)  # queued: committed
    return lock


def send(args: argparse.Namespace, lock: Lock, data: redis.Redis, *command: Any) -> Any:
    if args.bypass_gate:
        return data.execute_command(*command)  # type: ignore[no-untyped-call, unused-ignore]
    return lock.guarded(data, GATE, *command)


def cas(args: argparse.Namespace, lock: Lock, data: redis.Redis, new: int) -> None:
    """The critical section: read, hold, write `new`."""
    common = {"token": lock.token(), "new": new, "gated": not args.bypass_gate}
    emit(args.id, "invoke", "cas", **common)
    try:
        raw = send(args, lock, data, "GET", REGISTER)
        read = int(raw) if raw is not None else 0
    except Exception as e:  # nothing was written yet: the operation did not happen
        emit(args.id, "fail", "cas", error=f"{type(e).__name__}: {e}", **common)
        return
    mark = args.state_dir / f"holding-{args.id}"
    with contextlib.suppress(OSError):  # a missing mark only means the nemesis picks another moment
        mark.touch()
    time.sleep(args.hold_ms / 1000)
    with contextlib.suppress(OSError):
        mark.unlink(missing_ok=True)
    write_ns = time.monotonic_ns()
    try:
        send(args, lock, data, "SET", REGISTER, new)
    except LockLost as e:  # StaleToken included: the gate refused, nothing was written
        emit(args.id, "fail", "cas", read=read, write_ns=write_ns, error=f"{type(e).__name__}: {e}", **common)
        return
    except Exception as e:  # a timeout or a broken connection: the write may have been applied
        emit(args.id, "info", "cas", read=read, write_ns=write_ns, error=f"{type(e).__name__}: {e}", **common)
        return
    emit(args.id, "ok", "cas", read=read, write_ns=write_ns, **common)


def release(args: argparse.Namespace, lock: Lock) -> None:
    emit(args.id, "invoke", "release")
    try:
        lock.release()
    except Exception as e:
        emit(args.id, "fail", "release", error=f"{type(e).__name__}: {e}")
        return
    emit(args.id, "ok", "release")


def register(url: str) -> redis.Redis:
    """The register's connection, with the Rust worker's 1 s timeouts and no retry (a timeout
    must show as one). redis-py's default protocol: DLOCK.GUARD answers in it (before 0.4.0 a
    RESP3 client got RESP2's `$-1` for the empty register, on which redis-py's parser waited)."""
    return redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 0))


def work(args: argparse.Namespace) -> None:
    locks = manager(args)
    data = register(args.register)
    deadline = time.monotonic() + args.secs
    seq = 0
    while time.monotonic() < deadline:
        lock = acquire(args, locks)
        if lock is None:
            time.sleep(0.02)
            continue
        seq += 1
        cas(args, lock, data, args.id * 1_000_000 + seq)
        release(args, lock)


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        work(args)
    except Exception as e:  # setting up failed (bad URL, ...): say so, as the Rust worker does
        print(f"worker {args.id}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
