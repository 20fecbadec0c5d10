"""The sync API against five (or one) real nodes: every path of LockManager and Lock."""

from __future__ import annotations

import threading
import time

import pytest
from cluster import Server
from conftest import eventually, free_everywhere, status, urls, waiters

import dlock

# Tests whose subject is not timing use a generous per-node timeout, so that a loaded machine
# does not turn a slow reply into a "down" node (as the Rust client's tests do).
SLOW_OK = 0.5


def manager(servers: list[Server], **options: object) -> dlock.LockManager:
    return dlock.LockManager(urls(servers), timeout=SLOW_OK, **options)  # type: ignore[arg-type]


def test_try_lock_commits_one_token_on_every_node_when_it_is_read(five: list[Server]) -> None:
    lock = manager(five).try_lock("orders:42", ttl=10.0)
    token = lock.token()  # the commit a no-wait hold owes (test_commit.py)
    views = [status(s, "orders:42") for s in five]
    assert all(v is not None and v["owner"] == lock.owner for v in views)
    assert {v["token"] for v in views if v} == {token}  # FENCE raised every node to the max
    assert 9.0 < lock.validity <= 10.0
    bits, _, round_ = lock.owner.partition(":")  # 128 random bits in hex, and the round
    assert len(bits) == 32 and int(bits, 16) >= 0 and round_ == "0"
    lock.release()
    assert free_everywhere(five, "orders:42")


@pytest.mark.parametrize("count", [1, 5])
def test_a_held_lock_is_contended_at_every_short_wait(five: list[Server], count: int) -> None:
    """With the default 50 ms per-node timeout: a server answers a queued wait's end only at its
    next tick (up to 100 ms late), and that late answer, or the client's own time for the call
    running out first, is the wait's end, never a node failure (conformance/replies.json)."""
    nodes = urls(five[:count])
    held = dlock.LockManager(nodes).try_lock("r", ttl=30.0)
    locks = dlock.LockManager(nodes)
    for wait in [0.0, 0.05, 0.1] * 3:
        with pytest.raises(dlock.LockTimeout):
            locks.lock("r", ttl=10.0, wait=wait)
    held.release()


def test_a_held_lock_is_contended_for_others_and_they_leave_nothing(five: list[Server]) -> None:
    locks = manager(five)
    held = locks.try_lock("r", ttl=10.0)
    with pytest.raises(dlock.LockContended) as caught:
        locks.try_lock("r", ttl=10.0)
    assert not isinstance(caught.value, dlock.LockTimeout)
    assert caught.value.attempts == 1 and caught.value.resource == "r"
    assert all(status(s, "r")["owner"] == held.owner for s in five)  # type: ignore[index]
    held.release()


def test_context_manager_releases_on_exit_and_on_error(five: list[Server]) -> None:
    locks = manager(five)
    with locks.lock("r", ttl=10.0, wait=1.0) as lock:
        assert [status(s, "r")["token"] for s in five].count(lock.token()) >= 3  # type: ignore[index]
    assert free_everywhere(five, "r")
    with pytest.raises(RuntimeError, match="boom"), locks.lock("r", ttl=10.0, wait=1.0):
        raise RuntimeError("boom")
    assert free_everywhere(five, "r")


def test_tokens_strictly_increase_across_acquisitions(five: list[Server]) -> None:
    locks = manager(five)
    tokens = []
    for _ in range(5):
        with locks.lock("r", ttl=5.0, wait=1.0) as lock:
            tokens.append(lock.token())
    assert tokens == sorted(set(tokens))


def test_lock_waits_on_the_nodes_and_gets_it_at_the_release(five: list[Server]) -> None:
    locks = manager(five)
    holder = locks.try_lock("r", ttl=10.0)
    held = holder.token()  # read while held: an uncommitted token is not read after the release
    got: list[dlock.Lock] = []
    waiter = threading.Thread(target=lambda: got.append(locks.lock("r", ttl=10.0, wait=10.0)))
    waiter.start()
    eventually(lambda: all(len(waiters(s, "r")) == 1 for s in five), what="the wait queued on every node")
    ticket = waiters(five[0], "r")[0][1]
    assert isinstance(ticket, int) and ticket > 0  # several nodes: waits carry one ticket
    assert {waiters(s, "r")[0][1] for s in five} == {ticket}
    holder.release()
    waiter.join(timeout=10)
    assert got and got[0].token() > held
    got[0].release()
    eventually(lambda: free_everywhere(five, "r"), what="nothing left on the nodes")


def test_waiters_are_served_in_arrival_order(five: list[Server]) -> None:
    locks = manager(five)
    holder = locks.try_lock("r", ttl=10.0)
    order: list[str] = []
    threads = []
    for name in ("first", "second", "third"):
        # A manager each: one manager's callers queue in the process, one on the nodes at a time.
        waiter = manager(five)
        thread = threading.Thread(target=lambda n=name, w=waiter: take_and_note(w, n, order))
        thread.start()
        threads.append(thread)
        queued = len(threads)
        eventually(lambda q=queued: all(len(waiters(s, "r")) == q for s in five), what=f"{name} queued")
    holder.release()
    for thread in threads:
        thread.join(timeout=10)
    assert order == ["first", "second", "third"]


def take_and_note(locks: dlock.LockManager, name: str, order: list[str]) -> None:
    with locks.lock("r", ttl=10.0, wait=10.0):
        order.append(name)


def test_lock_times_out_with_lock_timeout_and_withdraws_its_wait(five: list[Server]) -> None:
    locks = manager(five)
    holder = locks.try_lock("r", ttl=10.0)
    started = time.monotonic()
    with pytest.raises(dlock.LockTimeout) as caught:
        locks.lock("r", ttl=10.0, wait=0.4)
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 1.5, elapsed
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, dlock.LockContended)
    assert all(not waiters(s, "r") for s in five)  # withdrawn before lock() answered
    assert all(status(s, "r")["owner"] == holder.owner for s in five)  # type: ignore[index]
    holder.release()


def test_wait_zero_still_asks_once(five: list[Server]) -> None:
    with manager(five).lock("r", ttl=5.0, wait=0) as lock:
        assert lock.token() > 0


def test_extend_resets_the_ttl_on_the_nodes(five: list[Server]) -> None:
    lock = manager(five).try_lock("r", ttl=2.0)
    lock.extend(30.0)
    assert lock.validity > 29.0
    assert all(s.client().pttl("r") > 29_000 for s in five)
    lock.extend()  # the TTL it was acquired with
    assert 1.5 < lock.validity <= 2.0
    with pytest.raises(ValueError, match="ttl"):
        lock.extend(0)
    lock.release()


def test_extend_of_a_lock_gone_from_a_majority_is_lock_lost(five: list[Server]) -> None:
    lock = manager(five).try_lock("r", ttl=10.0)
    for server in five[:3]:
        server.client().execute_command("DLOCK.FORCERELEASE", "r")
    before = lock.validity
    with pytest.raises(dlock.LockLost):
        lock.extend(10.0)
    assert lock.validity <= before  # still the earlier deadline


def test_release_twice_is_harmless_and_a_released_lock_is_free(five: list[Server]) -> None:
    lock = manager(five).try_lock("r", ttl=10.0)
    lock.release()
    lock.release()
    assert free_everywhere(five, "r")


def test_with_lock_returns_the_work_output_under_a_watchdog(five: list[Server]) -> None:
    locks = manager(five)
    assert locks.with_lock("r", lambda lock: lock.token() > 0 and lock.resource, ttl=1.0, wait=1.0) == "r"
    assert free_everywhere(five, "r")


def test_a_too_short_ttl_is_validity_expired_and_released(five: list[Server]) -> None:
    # 10 ms less the drift allowance (1% + 9.8 ms) leaves 0.1 ms: valid when asked for, gone long
    # before five nodes have granted and committed. (A TTL the allowance leaves nothing of is
    # refused before anything is sent: test_arguments.)
    with pytest.raises(dlock.ValidityExpired):
        manager(five, drift_constant=0.0098).try_lock("r", ttl=0.010)
    assert free_everywhere(five, "r")


def test_retry_mode_waits_by_retrying(five: list[Server]) -> None:
    locks = manager(five, wait_mode="retry")
    holder = locks.try_lock("r", ttl=10.0)
    held = holder.token()
    timer = threading.Timer(0.3, holder.release)
    timer.start()
    with locks.lock("r", ttl=10.0, wait=5.0) as lock:
        assert lock.token() > held
        assert lock.owner.endswith(":0")  # each attempt a new owner, of one round
    timer.join()
    holder = locks.try_lock("r", ttl=10.0)
    with pytest.raises(dlock.LockTimeout) as caught:  # retry_count bounds the attempts
        manager(five, wait_mode="retry", retry_count=2).lock("r", ttl=1.0, wait=5.0)
    assert caught.value.attempts == 3
    holder.release()


def fences(server: Server) -> int:
    stats = server.client().info("commandstats")
    return int(stats.get("cmdstat_dlock.fence", {}).get("calls", 0))


def test_one_node_skips_the_commit_and_sends_no_ticket(one: Server) -> None:
    locks = dlock.LockManager([one.url], timeout=SLOW_OK)
    holder = locks.try_lock("r", ttl=10.0)
    assert holder.token() == status(one, "r")["token"]  # type: ignore[index]
    got: list[dlock.Lock] = []
    waiter = threading.Thread(target=lambda: got.append(locks.lock("r", ttl=10.0, wait=10.0)))
    waiter.start()
    eventually(lambda: len(waiters(one, "r")) == 1, what="the wait queued")
    assert waiters(one, "r")[0][1] is None  # no ticket with one node
    holder.release()
    waiter.join(timeout=10)
    assert got[0].token() > holder.token()  # one node: nothing owed, read even after the release
    got[0].release()
    assert fences(one) == 0


def test_fencing_off_sends_no_fence(three: list[Server]) -> None:
    locks = manager(three, fencing=False)
    with locks.lock("r", ttl=5.0, wait=1.0) as lock:
        assert lock.token() > 0
    assert sum(fences(s) for s in three) == 0
    with manager(three).lock("r", ttl=5.0, wait=1.0):
        pass
    assert sum(fences(s) for s in three) >= 2


def test_one_node_wait_keeps_its_deadline_and_withdraws(one: Server) -> None:
    locks = dlock.LockManager([one.url], timeout=SLOW_OK)
    holder = locks.try_lock("r", ttl=10.0)
    started = time.monotonic()
    with pytest.raises(dlock.LockTimeout):
        locks.lock("r", ttl=10.0, wait=0.3)
    assert 0.3 <= time.monotonic() - started < 1.2  # the client's deadline, not the node's hz tick
    assert not waiters(one, "r")
    assert status(one, "r")["owner"] == holder.owner  # type: ignore[index]
    holder.release()


def test_one_node_down_is_no_quorum_for_lock(one: Server) -> None:
    one.kill()
    with pytest.raises(dlock.NoQuorum) as caught:
        dlock.LockManager([one.url], timeout=SLOW_OK).lock("r", ttl=10.0, wait=0.3)
    assert [f.node for f in caught.value.failures] == [one.url]
    assert "connection refused" in caught.value.failures[0].reason
