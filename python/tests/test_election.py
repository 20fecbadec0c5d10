"""Leader election against real nodes, sync client (docs/election.md; the Rust client's
tests/election.rs): campaign, resign and the handoff, proclaim, leader, the lease-loss contract
(frozen nodes, a refused extension, nothing sent after a resignation), bad input. Observing:
test_election_observe.py; the asyncio flavour: test_election_async.py."""

from __future__ import annotations

import threading
import time

import pytest
from cluster import Server
from conftest import urls

import dlock

LEASE = 1.5  # seconds, as the Rust tests


def manager(servers: list[Server], **options: object) -> dlock.LockManager:
    return dlock.LockManager(urls(servers), timeout=0.5, **options)  # type: ignore[arg-type]


def in_thread(work: object) -> tuple[threading.Thread, list[object]]:
    """Runs `work()` in a daemon thread; its result (or exception) lands in the list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(work())  # type: ignore[operator]
        except BaseException as error:
            out.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_campaign_resign_hands_over_at_once(masters: list[Server]) -> None:
    a, b = manager(masters), manager(masters)
    assert a.leader("jobs") is None, "nobody leads yet"
    first = a.campaign("jobs", "10.0.0.1:80", LEASE)
    leader = a.leader("jobs")
    assert leader == dlock.Leader(first.id, "10.0.0.1:80", first.epoch)
    waiting, elected = in_thread(lambda: b.campaign("jobs", "10.0.0.2:80", LEASE))
    time.sleep(0.3)
    assert waiting.is_alive(), "the second candidate waits while the first leads"
    resigned = time.monotonic()
    first.resign()
    waiting.join(timeout=20.0)
    assert elected and isinstance(elected[0], dlock.Leadership), elected
    assert time.monotonic() - resigned < 1.0, "handed over at once"
    second = elected[0]
    assert second.epoch > first.epoch, "epochs rise with every leader"
    assert a.leader("jobs") == dlock.Leader(second.id, "10.0.0.2:80", second.epoch)
    assert second.id != first.id
    second.resign()
    assert a.leader("jobs") is None


def test_proclaim_keeps_the_epoch_under_the_watchdog(masters: list[Server]) -> None:
    locks = manager(masters)
    with locks.campaign("svc", "v1", LEASE) as leading:
        epoch = leading.epoch
        leading.proclaim("v2 with spaces")
        assert leading.value == "v2 with spaces"
        assert locks.leader("svc") == dlock.Leader(leading.id, "v2 with spaces", epoch)
        assert not leading.lost.wait(timeout=LEASE * 2), "the watchdog still extends under the new value"
        assert locks.leader("svc") == dlock.Leader(leading.id, "v2 with spaces", epoch)
        leading.proclaim("")
        assert locks.leader("svc") == dlock.Leader(leading.id, "", epoch)
    assert locks.leader("svc") is None  # leaving the block resigned


def test_frozen_nodes_lose_leadership_at_the_renew_deadline(one: Server) -> None:
    locks = dlock.LockManager([one.url], timeout=0.2)
    leading = locks.campaign("frozen", "", LEASE)
    granted = time.monotonic()
    one.pause()
    try:
        assert leading.lost.wait(timeout=20.0), "lost in time"
        at = time.monotonic() - granted
    finally:
        one.resume()
    assert at < LEASE - LEASE / 10 + 0.1, f"lost at {at:.3f}s: after the renew deadline"
    assert at > LEASE / 2, f"lost at {at:.3f}s: before the renew deadline"


def test_a_refused_extension_is_a_loss_at_once(one: Server) -> None:
    leading = manager([one]).campaign("taken", "", LEASE)
    assert one.client().execute_command("DLOCK.FORCERELEASE", "taken") == 1
    started = time.monotonic()
    assert leading.lost.wait(timeout=20.0), "lost in time"
    assert time.monotonic() - started < LEASE / 2, "at the next extension (every lease / 3)"


def test_no_extension_is_sent_after_resign(one: Server) -> None:
    leading = manager([one]).campaign("quiet", "", 0.3)
    monitor = one.client()
    leading.resign()
    monitor.config_resetstat()
    time.sleep(0.4)
    stats = monitor.info("commandstats")
    assert not any("dlock.extend" in name for name in stats), f"an extension after resign: {stats}"


def test_leader_is_no_quorum_when_too_few_answer_and_wrong_kind_on_a_shared_lock(five: list[Server]) -> None:
    locks = manager(five)
    with locks.lock("shared", ttl=10.0, shared=True), pytest.raises(dlock.WrongKindError):
        locks.leader("shared")
    for server in five[:3]:
        server.kill()
    with pytest.raises(dlock.NoQuorum) as caught:
        locks.leader("jobs")
    assert caught.value.needed == 3


def test_bad_input_is_refused_before_any_node_is_asked() -> None:
    locks = dlock.LockManager(["redis://127.0.0.1:1"])  # nobody listens: a node asked would fail otherwise
    with pytest.raises(ValueError, match="needs a name"):
        locks.campaign("", "v", LEASE)
    with pytest.raises(ValueError, match="at most 200 bytes"):
        locks.campaign("e", "v" * 201, LEASE)
    with pytest.raises(ValueError, match="at most 200 bytes"):
        locks.campaign("e", "é" * 101, LEASE)  # bytes, not characters
    with pytest.raises(ValueError):
        locks.campaign("e", "v", 0)
    with pytest.raises(ValueError, match="needs a name"):
        locks.leader("")
    with pytest.raises(ValueError, match="needs a name"):
        locks.observe("")
    with pytest.raises(TypeError):
        locks.campaign("e", 7, LEASE)  # type: ignore[arg-type]
