"""Shared locks and semaphores, the pure side: the quorum by kind, the kind option on every
ACQUIRE, the arguments refused before any node is asked, kind refusals, and DLOCK.STATUS's two
shapes. Nothing here stands in for Redis: these functions never touch it (test_shared.py runs
the kinds against real nodes)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

import dlock
import dlock.asyncio
from dlock._pure import acquisition as m
from dlock._pure import attempt as att
from dlock._pure import commands as cmd
from dlock._pure.admin import Holder, LockInfo, node_status
from dlock._pure.kind import EXCLUSIVE, Kind, check_kind
from dlock._pure.replies import kind_refusal
from dlock._pure.timing import quorum
from dlock._pure.verdicts import REFUSED, AttemptFailed, KindRefusal
from dlock.errors import NodeFailure

# (nodes, limit, quorum): None is a lock (exclusive or shared), a majority.
QUORUMS = [
    (1, None, 1),
    (1, 1, 1),
    (1, 10_000, 1),
    (2, None, 2),
    (2, 1, 2),
    (3, None, 2),
    (3, 1, 2),
    (3, 2, 3),
    (3, 3, 3),
    (4, 2, 3),
    (4, 3, 4),
    (5, None, 3),
    (5, 1, 3),
    (5, 2, 4),
    (5, 3, 4),
    (5, 4, 5),
    (5, 10_000, 5),
    (7, 2, 5),
    (7, 3, 6),
    (7, 5, 6),
    (7, 6, 7),
]


@pytest.mark.parametrize(("nodes", "limit", "needed"), QUORUMS)
def test_the_quorum_by_kind(nodes: int, limit: int | None, needed: int) -> None:
    assert quorum(nodes, limit) == needed
    assert Kind(limit=limit).quorum(nodes) == needed
    if limit is None:
        assert Kind(shared=True).quorum(nodes) == needed  # shared holds: a majority too


def test_a_semaphore_quorum_is_the_smallest_that_k_plus_1_holders_cannot_all_get() -> None:
    """(k+1) holders each on q nodes need (k+1)*q permits; N nodes have N*k of them."""
    for nodes in range(1, 16):
        assert quorum(nodes, 1) == quorum(nodes)  # limit 1 is a mutex: a majority
        for limit in range(1, 25):
            q = quorum(nodes, limit)
            assert (limit + 1) * q > nodes * limit, (nodes, limit)
            assert (limit + 1) * (q - 1) <= nodes * limit, (nodes, limit)
            assert q <= nodes
            if limit >= nodes - 1:
                assert q == nodes, "k >= N-1 needs every node"


def test_the_kind_option_goes_last_on_every_acquire() -> None:
    assert cmd.kind_option(EXCLUSIVE) == ()
    assert cmd.kind_option(Kind(shared=True)) == ("SHARED",)
    assert cmd.kind_option(Kind(limit=3)) == ("LIMIT", 3)
    assert cmd.acquire("r", "o", 1000, EXCLUSIVE) == ("DLOCK.ACQUIRE", "r", "o", 1000)
    assert cmd.acquire("r", "o", 1000, Kind(shared=True)) == ("DLOCK.ACQUIRE", "r", "o", 1000, "SHARED")
    assert cmd.acquire("r", "o", 1000, Kind(limit=3)) == ("DLOCK.ACQUIRE", "r", "o", 1000, "LIMIT", 3)
    waited = ("DLOCK.ACQUIRE", "r", "o:0", 1000, "WAIT", 500)
    assert cmd.wait("r", "o:0", 1000, 500, None, Kind(shared=True)) == (*waited, "SHARED")
    assert cmd.wait("r", "o:0", 1000, 500, 77, Kind(limit=2)) == (*waited, "TICKET", 77, "LIMIT", 2)
    assert cmd.wait("r", "o:0", 1000, 500, 77, EXCLUSIVE) == (*waited, "TICKET", 77)


@pytest.mark.parametrize(
    ("shared", "limit", "error", "message"),
    [
        ("yes", None, TypeError, "shared must be True or False"),
        (1, None, TypeError, "shared must be True or False"),
        (False, True, TypeError, "limit must be an int from 1 to 10000"),
        (False, 2.0, TypeError, "limit must be an int"),
        (False, "2", TypeError, "limit must be an int"),
        (False, 0, ValueError, "limit must be from 1 to 10000, got 0"),
        (False, -1, ValueError, "limit must be from 1 to 10000"),
        (False, 10_001, ValueError, "limit must be from 1 to 10000, got 10001"),
        (True, 2, ValueError, "shared=True and limit=2 are exclusive"),
        (True, 1, ValueError, "shared=True and limit=1 are exclusive"),
    ],
)
def test_bad_kinds_are_refused(shared: object, limit: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_kind(shared, limit)


def test_good_kinds() -> None:
    assert check_kind(False, None) == EXCLUSIVE
    assert check_kind(True, None) == Kind(shared=True)
    assert check_kind(False, 1) == Kind(limit=1)
    assert check_kind(False, 10_000) == Kind(limit=10_000)


@pytest.fixture
def listening() -> Iterator[tuple[socket.socket, str]]:
    """A listening socket stands for a node: a refused call leaves it unasked (nothing to accept)."""
    with socket.socket() as node:
        node.bind(("127.0.0.1", 0))
        node.listen()
        node.setblocking(False)
        yield node, f"redis://127.0.0.1:{node.getsockname()[1]}"


BAD = [
    ({"shared": True, "limit": 2}, ValueError, "shared=True and limit=2 are exclusive"),
    ({"limit": True}, TypeError, "limit must be an int"),
    ({"limit": 0}, ValueError, "limit must be from 1 to 10000"),
    ({"limit": 10_001}, ValueError, "limit must be from 1 to 10000"),
    ({"shared": "no"}, TypeError, "shared must be True or False"),
]


@pytest.mark.parametrize(("kind", "error", "message"), BAD)
def test_bad_kinds_are_refused_before_any_node_is_asked(
    listening: tuple[socket.socket, str], kind: dict[str, object], error: type[Exception], message: str
) -> None:
    node, url = listening
    sync = dlock.LockManager([url, "redis://127.0.0.1:1", "redis://127.0.0.1:2"])
    aio = dlock.asyncio.LockManager([url, "redis://127.0.0.1:1", "redis://127.0.0.1:2"])
    calls = [
        lambda: sync.try_lock("r", 1.0, **kind),  # type: ignore[arg-type]
        lambda: sync.lock("r", 1.0, 0.1, **kind),  # type: ignore[arg-type]
        lambda: sync.with_lock("r", lambda lock: None, 1.0, 0.1, **kind),  # type: ignore[arg-type]
        lambda: aio.try_lock("r", 1.0, **kind),  # type: ignore[arg-type]
        lambda: aio.lock("r", 1.0, 0.1, **kind),  # type: ignore[arg-type]
        lambda: asyncio.run(aio.with_lock("r", asyncio.sleep, 1.0, 0.1, **kind)),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(error, match=message):
            call()
    with pytest.raises(BlockingIOError):
        node.accept()


@pytest.mark.parametrize(("limit", "error"), [(True, TypeError), (0, ValueError), (10_001, ValueError)])
def test_bad_limits_of_the_owner_name_calls_are_refused(
    listening: tuple[socket.socket, str], limit: object, error: type[Exception]
) -> None:
    node, url = listening
    sync, aio = dlock.LockManager([url]), dlock.asyncio.LockManager([url])
    with pytest.raises(error, match="limit"):
        sync.release_owner("r", "owner", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(error, match="limit"):
        sync.extend_owner("r", "owner", 1.0, limit=limit)  # type: ignore[arg-type]
    with pytest.raises(error, match="limit"):
        asyncio.run(aio.release_owner("r", "owner", limit=limit))  # type: ignore[arg-type]
    with pytest.raises(error, match="limit"):
        asyncio.run(aio.extend_owner("r", "owner", 1.0, limit=limit))  # type: ignore[arg-type]
    with pytest.raises(BlockingIOError):
        node.accept()


WRONGKIND = "WRONGKIND the resource is a lock, asked as a semaphore with LIMIT 3: a resource keeps its kind while held"
ACQUIRE = cmd.acquire("r", "o", 1000, Kind(limit=3))
UPGRADE = (  # the module's words (src/wire/errors.rs), without the ERR redis-py strips
    "owner holds the lock shared: upgrading to exclusive is refused (two upgrading readers would wait for each "
    "other forever); release the shared hold and acquire exclusive"
)


@pytest.mark.parametrize(
    ("request_", "said", "refused"),
    [
        (ACQUIRE, WRONGKIND, True),
        (cmd.wait("r", "o", 1000, 5, 9, Kind(shared=True)), WRONGKIND, True),
        (ACQUIRE, "unknown option 'LIMIT', allowed: REENTRANT WAIT TICKET", True),
        (ACQUIRE, "unknown option 'SHARED', allowed: REENTRANT WAIT TICKET", True),
        (ACQUIRE, UPGRADE, True),
        (ACQUIRE, "SHARED and LIMIT cannot be given together: a resource is a lock or a semaphore", False),
        (ACQUIRE, "too many clients wait for this lock already (dlock.max-waiters is 10)", False),
        (ACQUIRE, "TRYAGAIN the node is quarantined", False),
        (cmd.release("r", "o"), WRONGKIND, False),
        (cmd.extend("r", "o", 1000), UPGRADE, False),
    ],
)
def test_which_error_replies_refuse_the_kind_for_good(request_: cmd.Args, said: str, refused: bool) -> None:
    assert kind_refusal(request_, said) is refused


def test_a_kind_refusal_is_its_own_error_never_contention() -> None:
    wrong = AttemptFailed(REFUSED, [KindRefusal("redis://a:1", WRONGKIND)]).to_error("r", 3, 1, waited=True)
    assert isinstance(wrong, dlock.WrongKindError) and isinstance(wrong, dlock.KindRefused)
    assert isinstance(wrong, dlock.DlockError) and not isinstance(wrong, dlock.LockContended)
    assert (wrong.resource, wrong.node, wrong.reply) == ("r", "redis://a:1", WRONGKIND)
    assert str(wrong) == f'lock "r" is held as another kind on redis://a:1: {WRONGKIND}'
    upgrade = AttemptFailed(REFUSED, [KindRefusal("redis://a:1", "upgrade refused")]).to_error("r", 3, 1, False)
    assert type(upgrade) is dlock.KindRefused
    assert dlock.asyncio.WrongKindError is dlock.WrongKindError
    assert issubclass(dlock.WrongKindError, dlock.KindRefused)


def outcome(needed: int, replies: list[object], committed: bool = True) -> object:
    """What an attempt without a server wait comes to on five nodes: the replies in node order
    (a failed node's repeat failing too), then the commit's answers."""
    a, _ = att.Attempt.start(5, needed, att.Policy(queue=False))
    actions = [x for node, reply in enumerate(replies) for x in a.on_reply(node, 0, reply, False)]
    actions += [
        x for x in list(actions) if isinstance(x, att.AskAgain) for x in a.on_reply(x.node, 0, replies[x.node], False)
    ]
    for fence in [x for x in actions if isinstance(x, att.Fence)]:
        refused = None if committed else NodeFailure("n", "fence refused")
        actions += [y for node in fence.nodes for y in a.on_fenced(node, 0, refused if node == 0 else None, True)]
    ends = [x for x in actions if isinstance(x, (att.Held, att.Failed))]
    return ends[0].token if isinstance(ends[0], att.Held) else ends[0].error.kind


def test_the_verdicts_count_to_the_kind_s_quorum() -> None:
    down = NodeFailure("n", "timed out")
    assert outcome(quorum(5, 2), [1, 5, 3, 2, None]) == 5
    assert outcome(quorum(5), [1, 5, 3, None, None]) == 5
    assert outcome(quorum(5, 2), [1, 5, 3, None, None]) == "contended"  # a semaphore of 2 on 5 nodes needs 4
    assert outcome(quorum(5, 2), [1, 2, 3, down, down]) == "no quorum"
    assert outcome(4, [1, 5, 3, 2, None], committed=False) == "no quorum"


def test_the_acquisition_machine_waits_for_the_kind_s_quorum() -> None:
    a, _ = m.Acquisition.start(5, quorum(5, 2))
    for node in range(3):
        assert a.on(m.Granted(node, 0, node + 1)) == []
    assert a.on(m.Granted(3, 0, 9)) == [m.Fence(0, 9, [0, 1, 2, 3])]
    for node in range(3):
        assert a.on(m.Fenced(node, 0, True)) == []
    assert a.on(m.Fenced(3, 0, True)) == [m.Held(9)]
    b, _ = m.Acquisition.start(3, quorum(3, 2))  # every node
    assert b.on(m.Unavailable(1, 0)) == [m.Release(0, [0, 1, 2]), m.Failed()]


def test_status_of_a_plain_lock_keeps_its_shape() -> None:
    view = node_status("n", [b"owner", b"o1", b"token", 7, b"ttl", 900, b"holds", 1, b"waiters", 2])
    held = Holder("o1", 7, 900, 1, "exclusive")
    assert view.info == LockInfo("o1", 7, 900, 1, 2, "exclusive", None, (held,))
    assert node_status("n", None).info is None


def test_status_of_a_shared_lock_and_of_a_semaphore() -> None:
    holders = [
        [b"owner", b"a", b"token", 4, b"ttl", 800, b"holds", 1, b"mode", b"shared"],
        [b"owner", b"b", b"token", 6, b"ttl", 950, b"holds", 2, b"mode", b"shared"],
    ]
    view = node_status("n", [b"kind", b"shared", b"holders", holders, b"waiters", 1])
    assert view.info is not None and view.failure is None
    assert (view.info.kind, view.info.limit, view.info.waiters) == ("shared", None, 1)
    assert view.info.holders == (Holder("a", 4, 800, 1, "shared"), Holder("b", 6, 950, 2, "shared"))
    assert (view.info.owner, view.info.token, view.info.ttl_ms, view.info.holds) == ("b", 6, 950, 2)
    permits = {
        "kind": "semaphore",
        "limit": 3,
        "holders": [{"owner": "c", "token": 9, "ttl": 10, "holds": 1, "mode": "permit"}],
        "waiters": 0,
    }
    sem = node_status("n", permits)  # a RESP3 map
    assert sem.info is not None
    assert (sem.info.kind, sem.info.limit, sem.info.holders) == ("semaphore", 3, (Holder("c", 9, 10, 1, "permit"),))


@pytest.mark.parametrize("reply", [[b"owner"], b"OK", [b"kind", b"shared", b"holders", [[b"owner"]], b"waiters", 0]])
def test_a_status_reply_of_neither_shape_is_that_node_s_failure(reply: object) -> None:
    view = node_status("n", reply)
    assert view.info is None and view.failure is not None and "unexpected DLOCK.STATUS reply" in view.failure
