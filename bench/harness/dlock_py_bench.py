"""dlock Python client (python/, package dlock-client) contender for `make bench`
(scenarios.py runs the scenarios)."""

from dlock import LockManager

import scenarios
from scenarios import Release


class DlockPython:
    def __init__(self, locks: LockManager) -> None:
        self.locks = locks

    def cycle(self, key: str) -> None:
        # try_lock raises if not acquired. The token is not read, so no commit (FENCE) is paid:
        # exclusion only, as the other contenders give (a reader would pay it: `lock.token()`).
        self.locks.try_lock(key, ttl=10.0).release()

    def wait_for(self, key: str) -> Release:
        return self.locks.lock(key, ttl=10.0, wait=60.0).release  # queued on the nodes

    def hold(self, key: str, extensions: int) -> tuple[Release, Release]:
        lock = self.locks.try_lock(key, ttl=10.0)
        return (lambda: lock.extend(10.0)), lock.release


def main() -> None:
    a = scenarios.parse_args("dlockpy")
    # A generous per-node timeout: the benchmark measures speed, not failure detection, and a
    # loaded 2-core machine must not turn a slow reply into a "down" node.
    with LockManager(scenarios.node_urls(a), timeout=0.5) as locks:
        scenarios.run(DlockPython(locks), a)


if __name__ == "__main__":
    main()
