"""pottery (Python Redlock) contender for `make bench` (scenarios.py runs the scenarios)."""

from pottery import Redlock
from redis import Redis

import scenarios
from scenarios import Release


class Pottery:
    def __init__(self, urls: list[str]) -> None:
        self.masters = frozenset(Redis.from_url(u) for u in urls)

    def lock(self, key: str, **options: int) -> Redlock:
        return Redlock(key=key, masters=self.masters, auto_release_time=10, **options)

    def cycle(self, key: str) -> None:
        lock = self.lock(key)
        if not lock.acquire(blocking=False):
            raise RuntimeError(f"not acquired: {key}")
        lock.release()

    def wait_for(self, key: str) -> Release:
        lock = self.lock(key)
        lock.acquire()  # pottery's own retry loop
        return lock.release

    def hold(self, key: str, extensions: int) -> tuple[Release, Release]:
        lock = self.lock(key, num_extensions=extensions + 1)
        lock.acquire()
        return lock.extend, lock.release


def main() -> None:
    a = scenarios.parse_args("pottery")
    scenarios.run(Pottery(scenarios.node_urls(a)), a)


if __name__ == "__main__":
    main()
