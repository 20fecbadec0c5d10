"""Faults, sync client: nodes down, a paused node, a lock lost under the watchdog, max_hold."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from cluster import Server, start
from conftest import eventually, free_everywhere, status, urls, waiters

import dlock


def test_two_of_five_nodes_down_still_locks(five: list[Server]) -> None:
    for server in five[:2]:
        server.kill()
    locks = dlock.LockManager(urls(five), timeout=0.5)
    with locks.lock("r", ttl=10.0, wait=2.0) as lock:
        assert all(status(s, "r")["token"] == lock.token() for s in five[2:])  # type: ignore[index]
    first = locks.try_lock("r", ttl=10.0)
    first.release()


def test_three_of_five_down_is_no_quorum_naming_them(five: list[Server]) -> None:
    down = five[:3]
    for server in down:
        server.kill()
    locks = dlock.LockManager(urls(five), timeout=0.5)
    with pytest.raises(dlock.NoQuorum) as caught:
        locks.try_lock("r", ttl=10.0)
    assert caught.value.needed == 3
    assert sorted(f.node for f in caught.value.failures) == sorted(urls(down))
    for server in down:
        assert server.url in str(caught.value)
    assert "connection refused: is the server running" in str(caught.value)
    with pytest.raises(dlock.NoQuorum) as waited:  # queue mode: the same answer, named the same
        locks.lock("r", ttl=10.0, wait=0.3)
    assert sorted(f.node for f in waited.value.failures) == sorted(urls(down))
    assert free_everywhere(five[3:], "r")  # the two live nodes were released


def test_a_paused_node_costs_at_most_the_per_node_timeout(five: list[Server]) -> None:
    locks = dlock.LockManager(urls(five), timeout=0.1)
    locks.try_lock("warm-up", ttl=5.0).release()  # connections made while every node answers
    five[0].pause()
    try:
        started = time.monotonic()
        lock = locks.try_lock("r", ttl=10.0)
        elapsed = time.monotonic() - started
        assert elapsed < 0.6, elapsed  # one 100 ms timeout, plus a loaded machine's slack
        started = time.monotonic()
        lock.release()
        waited = locks.lock("r", ttl=10.0, wait=5.0)  # queue mode: the four others grant
        assert time.monotonic() - started < 0.8
        assert all(status(s, "r")["owner"] == waited.owner for s in five[1:])  # type: ignore[index]
        waited.release()
    finally:
        five[0].resume()


@pytest.mark.parametrize("how", ["forcerelease", "flushall"])
def test_a_lock_lost_on_a_majority_is_signalled_and_the_watchdog_stops(five: list[Server], how: str) -> None:
    locks = dlock.LockManager(urls(five), timeout=0.5)
    with pytest.raises(dlock.LockLost), locks.lock("r", ttl=0.9, wait=1.0, watchdog=True) as lock:
        for server in five[:3]:
            if how == "flushall":
                server.client().flushall()
            else:
                server.client().execute_command("DLOCK.FORCERELEASE", "r")
        assert lock.lost.wait(timeout=3.0), "loss not signalled"
        watchdog = lock._watchdog
        assert watchdog is not None
        watchdog.thread.join(timeout=1.0)
        assert not watchdog.thread.is_alive()  # it stopped extending


def test_the_watchdog_keeps_the_lock_past_several_ttls(five: list[Server]) -> None:
    locks = dlock.LockManager(urls(five), timeout=0.5)
    with locks.lock("r", ttl=0.6, wait=1.0, watchdog=True) as lock:
        assert not lock.lost.wait(timeout=2.0)  # more than 3 TTLs
        assert all(status(s, "r")["owner"] == lock.owner for s in five)  # type: ignore[index]
    assert free_everywhere(five, "r")


def test_max_hold_stops_the_watchdog_and_signals_loss(five: list[Server]) -> None:
    locks = dlock.LockManager(urls(five), timeout=0.5, max_hold=0.5)
    started = time.monotonic()
    lock = locks.lock("r", ttl=0.9, wait=1.0, watchdog=True)
    assert lock.lost.wait(timeout=3.0)
    assert 0.45 <= time.monotonic() - started < 1.5
    # No longer extended: the nodes let it run out at its TTL.
    eventually(lambda: free_everywhere(five, "r"), within=3.0, what="the lock running out")
    with pytest.raises(dlock.LockLost):
        lock.__exit__(None, None, None)


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_while_waiting_withdraws_the_wait(count: int) -> None:
    servers = start(count)
    try:
        locks = dlock.LockManager(urls(servers), timeout=0.5)
        holder = locks.try_lock("r", ttl=30.0)
        main = threading.main_thread().ident
        assert main is not None and threading.current_thread().ident == main

        def interrupt_once_queued() -> None:
            eventually(lambda: all(len(waiters(s, "r")) == 1 for s in servers), what="the wait queued")
            signal.pthread_kill(main, signal.SIGINT)

        interrupter = threading.Thread(target=interrupt_once_queued)
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            locks.lock("r", ttl=10.0, wait=20.0)
        interrupter.join()
        assert all(not waiters(s, "r") for s in servers)  # withdrawn before the interrupt went on
        assert all(status(s, "r")["owner"] == holder.owner for s in servers)  # type: ignore[index]
        holder.release()
        assert free_everywhere(servers, "r")
    finally:
        for server in servers:
            server.stop()


def test_a_connection_left_dead_by_a_restart_is_replaced_and_the_call_repeated(one: Server) -> None:
    """EXTEND and RELEASE are not re-asked at the round level: on the stale connection alone they
    would fail (NoQuorum); repeated on a fresh one, the restarted node answers that it no longer
    holds the lock (it lost its data): LockLost, and a release that counts as answered."""
    locks = dlock.LockManager([one.url], timeout=0.5)
    lock = locks.try_lock("r", ttl=30.0)
    one.restart()
    with pytest.raises(dlock.LockLost):
        lock.extend()
    second = locks.try_lock("r", ttl=30.0)
    one.restart()
    second.release()  # answered (0): no NoQuorum
    with locks.lock("r", ttl=5.0, wait=1.0) as third:  # the wait connections too
        assert status(one, "r")["owner"] == third.owner  # type: ignore[index]


def test_a_quarantined_node_is_named_with_its_tryagain() -> None:
    servers = start(3)
    servers += start(2, module_args=("quarantine-ms", "60000"))  # just (re)started: no grants yet
    try:
        locks = dlock.LockManager(urls(servers), timeout=0.5)
        with locks.lock("r", ttl=5.0, wait=1.0) as lock:  # the three others are a majority
            assert lock.token() > 0
        for server in servers[:2]:
            server.kill()
        with pytest.raises(dlock.NoQuorum) as caught:
            locks.try_lock("r", ttl=5.0)
        reasons = {f.node: f.reason for f in caught.value.failures}
        assert all(reasons[s.url].startswith("TRYAGAIN dlock is in restart quarantine") for s in servers[3:])
        assert all(reasons[s.url].startswith("connection refused") for s in servers[:2])
    finally:
        for server in servers:
            server.stop()
