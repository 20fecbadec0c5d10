"""The protocol's pure decisions, ported with the Rust client's own unit tests
(client/src/acquisition_tests.rs, attempt_tests.rs, timing.rs): the wound-wait paths that real nodes
reach only by racing, and the arithmetic. Nothing here stands in for Redis: these functions never
touch it."""

from __future__ import annotations

import itertools

from dlock._pure import acquisition as m
from dlock._pure import attempt as att
from dlock._pure.options import Options
from dlock._pure.timing import draw_ticket, drift, quorum, validity
from dlock.errors import NodeFailure


def test_a_majority_of_grants_commits_the_largest_token_on_them() -> None:
    a, steps = m.Acquisition.start(3, quorum(3))
    assert steps == [m.Wait(0, [0, 1, 2])]
    assert a.on(m.Granted(2, 0, 11)) == []
    assert a.on(m.Granted(0, 0, 6)) == [m.Fence(0, 11, [0, 2])]
    assert a.on(m.Fenced(0, 0, True)) == []
    assert a.on(m.Fenced(2, 0, True)) == [m.Held(11)]
    assert a.held() == 11


def test_a_wounded_grant_fails_the_commit_and_the_next_round_waits_again() -> None:
    a, _ = m.Acquisition.start(3, quorum(3))
    a.on(m.Granted(0, 0, 5))
    a.on(m.Granted(1, 0, 7))
    assert a.on(m.Fenced(0, 0, True)) == [], "one more commit could still make it"
    assert a.on(m.Fenced(1, 0, False)) == [m.Release(0, [0, 1, 2]), m.Wait(1, [0, 1, 2])]
    assert a.round == 1
    assert a.on(m.Fenced(0, 0, True)) == [], "stale replies of round 0 are ignored"
    assert a.on(m.Granted(2, 0, 9)) == [m.Release(0, [2])], "but a stale grant is released at once"
    a.on(m.Granted(1, 1, 12))
    assert a.on(m.Granted(2, 1, 10)) == [m.Fence(1, 12, [1, 2])]


def test_duplicate_fence_replies_count_once() -> None:
    a, _ = m.Acquisition.start(5, quorum(5))
    for node in range(3):
        a.on(m.Granted(node, 0, 1))
    a.on(m.Fenced(0, 0, True))
    a.on(m.Fenced(0, 0, True))
    assert a.held() is None


def test_one_node_holds_at_its_grant() -> None:
    a, _ = m.Acquisition.start(1, quorum(1))
    assert a.on(m.Granted(0, 0, 4)) == [m.Held(4)]


def test_too_many_unavailable_nodes_fail_the_acquisition() -> None:
    a, _ = m.Acquisition.start(3, quorum(3))
    a.on(m.Granted(0, 0, 4))
    assert a.on(m.Unavailable(1, 0)) == []
    assert a.on(m.Unavailable(2, 0)) == [m.Release(0, [0, 1, 2]), m.Failed()]


def asked_again(replies: list[object]) -> list[int]:
    """The nodes an attempt without a server wait asks again, given replies in node order."""
    a, _ = att.Attempt.start(3, 2, att.Policy(queue=False))
    actions = [x for node, reply in enumerate(replies) for x in a.on_reply(node, 0, reply, False)]
    return [x.node for x in actions if isinstance(x, att.AskAgain)]


def test_a_node_is_asked_again_only_when_that_can_change_the_outcome() -> None:
    down = NodeFailure("n", "timed out")
    assert asked_again([1, 2, down]) == []  # a quorum already
    assert asked_again([1, down, None]) == [1]
    assert asked_again([None, None, down]) == []  # the attempt failed before: cannot reach 2 grants


def test_quorum_drift_and_validity() -> None:
    assert [quorum(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]
    opts = Options()
    assert abs(drift(10_000, opts) - 0.102) < 1e-9  # 1 % of the TTL plus 2 ms
    left = validity(10_000, 100.0, 100.030, opts)
    assert left is not None and abs(left - (10.0 - 0.030 - 0.102)) < 1e-9
    assert validity(100, 0.0, 0.097, opts) is None  # 100 ms TTL: 3 ms drift + 97 ms elapsed


def test_tickets_strictly_increase_within_a_process() -> None:
    tickets = [draw_ticket() for _ in range(1000)]
    assert all(a < b for a, b in itertools.pairwise(tickets))
