"""Shared locks and semaphores against real nodes (the module's SHARED and LIMIT k,
docs/shared.md), on 1 and on 5 masters, sync and asyncio: many shared holders, shared
and exclusive excluding each other, a queued exclusive waiter ahead of later shared arrivals, a
semaphore's limit never exceeded, a SIGKILLed holder's permit back at its lease's end, WRONGKIND,
and each kind's quorum. The Rust CLI's side is test_shared_interop.py."""

from __future__ import annotations

import asyncio
import itertools
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from cluster import Server, start
from conftest import eventually, free_everywhere, urls, waiters

import dlock
import dlock.asyncio


@pytest.fixture(params=[1, 5], ids=["1-master", "5-masters"])
def masters(request: pytest.FixtureRequest) -> Iterator[list[Server]]:
    servers = start(request.param)
    yield servers
    for server in servers:
        server.stop()


def manager(servers: list[Server], **options: object) -> dlock.LockManager:
    return dlock.LockManager(urls(servers), timeout=0.5, **options)  # type: ignore[arg-type]


def test_many_shared_holders_at_once(masters: list[Server]) -> None:
    locks = manager(masters)
    held = [locks.try_lock("r", ttl=10.0, shared=True) for _ in range(4)]
    held.append(locks.lock("r", ttl=10.0, wait=1.0, shared=True))
    tokens = [lock.token() for lock in held]  # committed when read, before the nodes are looked at
    assert all(a < b for a, b in itertools.pairwise(tokens)), tokens  # each its own, rising
    assert all(lock.shared and lock.limit is None for lock in held)
    views = locks.status("r")
    owners = {lock.owner for lock in held}
    for view in views:  # a node that answered after the 0.5 s timeout may lack a holder
        assert view.info is not None and view.info.kind == "shared"
        assert {h.owner for h in view.info.holders} <= owners
        assert {h.mode for h in view.info.holders} == {"shared"}
    for lock in held:  # committed on a majority (a wait granted late elsewhere has its own token)
        seen = [(h.owner, h.token) for v in views if v.info for h in v.info.holders]
        assert seen.count((lock.owner, lock.token())) >= len(masters) // 2 + 1
    for lock in held:
        lock.release()
    assert free_everywhere(masters, "r")


def acquires_seen(server: Server, action: Callable[[], None]) -> list[str]:
    """The DLOCK.ACQUIRE commands `server` ran during `action`, as MONITOR prints them."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as monitor:
        monitor.sendall(b"MONITOR\r\n")
        assert monitor.recv(5) == b"+OK\r\n"
        action()
        time.sleep(0.1)
        monitor.settimeout(0.2)
        out = b""
        try:
            while chunk := monitor.recv(65536):
                out += chunk
        except TimeoutError:
            pass
    return [line for line in out.decode().splitlines() if '"DLOCK.ACQUIRE"' in line]


def test_the_kind_option_goes_on_every_acquire_and_wait(masters: list[Server]) -> None:
    locks = manager(masters)

    def contend() -> None:
        writer = locks.try_lock("r", ttl=10.0)
        written = writer.token()  # read while held: an uncommitted token is not read after the release
        thread, reader = take_in_thread(locks, 0.0, shared=True)  # waits in the queue
        eventually(lambda: all(waiters(s, "r") for s in masters), what="the shared wait queued")
        writer.release()
        thread.join(10)
        assert reader.error is None and reader.token > written
        locks.try_lock("s", ttl=10.0, limit=3).release()

    seen = acquires_seen(masters[-1], contend)
    assert len(seen) >= 3, seen
    assert seen[0].endswith('"10000"'), "the exclusive one has no option"
    waits = [line for line in seen[1:] if '"WAIT"' in line]
    assert waits and all(line.endswith('"SHARED"') for line in waits), seen
    assert seen[-1].endswith('"LIMIT" "3"'), seen


def test_shared_excludes_exclusive_and_exclusive_excludes_shared(masters: list[Server]) -> None:
    locks = manager(masters)
    reader = locks.try_lock("r", ttl=10.0, shared=True)
    read = reader.token()
    with pytest.raises(dlock.LockContended):
        locks.try_lock("r", ttl=10.0)
    with pytest.raises(dlock.LockTimeout):
        locks.lock("r", ttl=10.0, wait=0.2)
    reader.release()
    writer = locks.try_lock("r", ttl=10.0)
    assert writer.token() > read
    with pytest.raises(dlock.LockContended):
        locks.try_lock("r", ttl=10.0, shared=True)
    with pytest.raises(dlock.LockTimeout):
        locks.lock("r", ttl=10.0, wait=0.2, shared=True)
    writer.release()
    assert free_everywhere(masters, "r")


@dataclass
class Taken:
    """One lock() call in a thread: when it was asked for, its token, and when it got it."""

    asked: float = 0.0
    token: int = 0
    at: float = 0.0
    error: BaseException | None = None


def take_in_thread(locks: dlock.LockManager, hold: float, **kind: object) -> tuple[threading.Thread, Taken]:
    taken = Taken(asked=time.monotonic())

    def run() -> None:
        try:
            with locks.lock("r", ttl=10.0, wait=20.0, **kind) as lock:  # type: ignore[arg-type]
                taken.token, taken.at = lock.token(), time.monotonic()
                time.sleep(hold)
        except BaseException as e:
            taken.error = e

    thread = threading.Thread(target=run)
    thread.start()
    return thread, taken


def test_a_queued_exclusive_waiter_blocks_later_shared_arrivals(masters: list[Server]) -> None:
    locks = manager(masters)
    reader = locks.try_lock("r", ttl=10.0, shared=True)
    read = reader.token()
    writer_thread, writer = take_in_thread(locks, 0.3)
    eventually(lambda: all(len(waiters(s, "r")) == 1 for s in masters), what="the exclusive waiter queued everywhere")
    with pytest.raises(dlock.LockContended):  # shared is held, but a writer waits: no barging
        locks.try_lock("r", ttl=10.0, shared=True)
    late_thread, late = take_in_thread(locks, 0.0, shared=True)
    eventually(lambda: all(len(waiters(s, "r")) == 2 for s in masters), what="the shared arrival queued behind")
    time.sleep(0.2)
    assert writer.token == 0 and late.token == 0, "both wait while the first reader holds"
    reader.release()
    for thread in (writer_thread, late_thread):
        thread.join(30)
    assert writer.error is None and late.error is None, (writer.error, late.error)
    assert read < writer.token < late.token
    assert late.at >= writer.at + 0.25, "the later shared arrival waited for the writer's whole hold"
    assert free_everywhere(masters, "r")


def check_permits(taken: list[tuple[float, float, int]], limit: int, most: int) -> None:
    """(asked, released, token) of every hold: never more than `limit` at once; tokens distinct,
    and larger than those of every hold released before it was asked for."""
    assert 1 <= most <= limit, most
    tokens = [token for _, _, token in taken]
    assert len(set(tokens)) == len(tokens), tokens
    for (asked, _, token), (_, released, earlier) in itertools.product(taken, taken):
        if released < asked:
            assert token > earlier, (token, earlier)


def test_a_semaphore_never_has_more_than_k_holders(masters: list[Server]) -> None:
    limit, rounds = 3, 4
    locks = manager(masters)
    guard, inside, most = threading.Lock(), [0], [0]
    taken: list[tuple[float, float, int]] = []
    errors: list[BaseException] = []

    def contender() -> None:
        try:
            for _ in range(rounds):
                asked = time.monotonic()
                with locks.lock("sem", ttl=10.0, wait=30.0, limit=limit) as permit:
                    with guard:
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                    time.sleep(0.03)
                    with guard:
                        inside[0] -= 1
                        released = time.monotonic()
                taken.append((asked, released, permit.token()))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=contender) for _ in range(limit + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert len(taken) == (limit + 2) * rounds
    check_permits(taken, limit, most[0])
    assert free_everywhere(masters, "sem")


def test_a_semaphore_never_has_more_than_k_holders_asyncio(masters: list[Server]) -> None:
    limit, rounds = 2, 4

    async def test() -> tuple[list[tuple[float, float, int]], int]:
        locks = dlock.asyncio.LockManager(urls(masters), timeout=0.5)
        inside, most = [0], [0]
        taken: list[tuple[float, float, int]] = []

        async def contender() -> None:
            for _ in range(rounds):
                asked = time.monotonic()
                async with locks.lock("sem", ttl=10.0, wait=30.0, limit=limit) as permit:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    await asyncio.sleep(0.03)
                    inside[0] -= 1
                    released = time.monotonic()
                taken.append((asked, released, await permit.token()))

        await asyncio.gather(*(contender() for _ in range(limit + 2)))
        await locks.close()
        return taken, most[0]

    taken, most = asyncio.run(test())
    assert len(taken) == (limit + 2) * rounds
    check_permits(taken, limit, most)
    assert most == limit, "k+2 contenders filled the semaphore at some point"
    assert free_everywhere(masters, "sem")


HOLDER = """
import sys, time
from dlock import LockManager
locks = LockManager(sys.argv[1].split(","), timeout=0.5)
permit = locks.try_lock("sem", ttl=float(sys.argv[2]), limit=2)
print(permit.token(), flush=True)
time.sleep(3600)
"""


def test_a_killed_holder_s_permit_is_free_when_its_lease_ends(masters: list[Server]) -> None:
    lease = 1.5
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, ",".join(urls(masters)), str(lease)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        child_token = int(child.stdout.readline())
        taken_at = time.monotonic()
        locks = manager(masters)
        mine = locks.try_lock("sem", ttl=30.0, limit=2)
        with pytest.raises(dlock.LockContended):
            locks.try_lock("sem", ttl=30.0, limit=2)
    finally:
        child.kill()  # SIGKILL: nothing released
        child.wait()
    with pytest.raises(dlock.LockContended):
        locks.try_lock("sem", ttl=30.0, limit=2)  # the dead holder's lease still runs
    third = locks.lock("sem", ttl=30.0, wait=10.0, limit=2)
    assert time.monotonic() - taken_at >= lease - 0.2, "granted only once the lease ran out"
    assert third.token() > max(child_token, mine.token())
    third.release()
    mine.release()
    assert free_everywhere(masters, "sem")


def test_wrongkind_is_raised_at_once_and_never_retried(masters: list[Server]) -> None:
    locks = manager(masters)
    permit = locks.try_lock("sem", ttl=10.0, limit=3)
    for kind in ({"limit": 2}, {"shared": True}, {}):
        with pytest.raises(dlock.WrongKindError, match="WRONGKIND") as caught:
            locks.try_lock("sem", ttl=10.0, **kind)  # type: ignore[arg-type]
        assert caught.value.node in urls(masters) and caught.value.reply.startswith("WRONGKIND ")
        started = time.monotonic()
        with pytest.raises(dlock.WrongKindError):
            locks.lock("sem", ttl=10.0, wait=5.0, **kind)  # type: ignore[arg-type]
        assert time.monotonic() - started < 1.0, "refused at once, not waited on nor retried"
    with pytest.raises(dlock.WrongKindError):
        manager(masters, wait_mode="retry").lock("sem", ttl=10.0, wait=5.0, limit=4)
    for view in locks.status("sem"):  # the refused attempts left nothing
        assert view.info is not None and (view.info.kind, view.info.limit) == ("semaphore", 3)
        assert [(h.owner, h.mode) for h in view.info.holders] == [(permit.owner, "permit")]
    assert all(not waiters(s, "sem") for s in masters), "no refused wait left queued"
    permit.release()
    locks.try_lock("sem", ttl=10.0, shared=True).release()  # free again: any kind
    reader = locks.try_lock("rw", ttl=10.0, shared=True)
    with pytest.raises(dlock.LockTimeout):  # its own shared hold keeps an exclusive lock() out
        locks.lock("rw", ttl=10.0, wait=0.2)
    with pytest.raises(dlock.WrongKindError):
        locks.try_lock("rw", ttl=10.0, limit=2)
    reader.release()
    assert free_everywhere(masters, "sem") and free_everywhere(masters, "rw")


def test_wrongkind_in_asyncio(masters: list[Server]) -> None:
    async def test() -> None:
        locks = dlock.asyncio.LockManager(urls(masters), timeout=0.5)
        async with locks.lock("sem", ttl=10.0, wait=1.0, limit=2) as permit:
            assert permit.limit == 2
            with pytest.raises(dlock.asyncio.WrongKindError):
                await locks.lock("sem", ttl=10.0, wait=5.0, limit=3)
            with pytest.raises(dlock.asyncio.WrongKindError):
                await locks.try_lock("sem", ttl=10.0, shared=True)
        await locks.close()

    asyncio.run(test())
    assert free_everywhere(masters, "sem")


def test_each_kind_s_quorum_on_five_masters() -> None:
    """limit 2 on 5 nodes needs 4: one node down is fine, two are not (a lock would still do
    with 3); limit 4 needs all 5. Extensions count to the same quorum."""
    servers = start(5)
    try:
        locks = manager(servers)
        servers[0].kill()
        locks.try_lock("a", ttl=10.0, limit=2).release()
        with pytest.raises(dlock.NoQuorum) as every:
            locks.try_lock("b", ttl=10.0, limit=4)
        assert every.value.needed == 5
        permit = locks.try_lock("c", ttl=10.0, limit=2)
        lock = locks.try_lock("d", ttl=10.0, shared=True)
        servers[1].kill()
        with pytest.raises(dlock.NoQuorum) as extended:
            permit.extend()
        assert extended.value.needed == 4
        lock.extend()  # a majority, 3 of 5, still answers
        with pytest.raises(dlock.NoQuorum) as taken:
            locks.lock("e", ttl=10.0, wait=0.3, limit=2)
        assert taken.value.needed == 4
        lock.release()
    finally:
        for server in servers:
            server.stop()


def test_the_upgrade_refusal_is_a_kind_refusal() -> None:
    """A shared holder asking for the exclusive side with its own owner (no API of this client
    does that: each acquisition has a fresh owner) is refused with an ERR that the client
    classifies as a kind refusal, never retried."""
    from dlock._pure.replies import kind_refusal, reason

    [server] = start(1)
    try:
        reader = manager([server]).try_lock("r", ttl=10.0, shared=True)
        request = ("DLOCK.ACQUIRE", "r", reader.owner, 10_000)
        with pytest.raises(Exception) as caught:
            server.client().execute_command(*request)
        assert kind_refusal(request, reason(caught.value)), str(caught.value)
    finally:
        server.stop()


def test_with_lock_keeps_a_permit_and_a_shared_hold_extended(masters: list[Server]) -> None:
    """The watchdog extends every ttl/3, counting to the kind's quorum: both outlive 3 TTLs."""
    locks = manager(masters)

    def work(lock: dlock.Lock) -> int:
        time.sleep(1.0)
        assert not lock.lost.is_set() and lock.validity > 0
        return lock.token()

    assert locks.with_lock("sem", work, ttl=0.3, wait=1.0, limit=2) > 0
    assert locks.with_lock("rw", work, ttl=0.3, wait=1.0, shared=True) > 0
    assert free_everywhere(masters, "sem") and free_everywhere(masters, "rw")
