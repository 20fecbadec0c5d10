"""The pure parts of cluster routing and replica acknowledgement (dlock/_cluster.py, _ack.py),
with the Rust crate's cases (client/src/transport/slots.rs, cluster.rs, ack.rs)."""

from __future__ import annotations

import pytest
from redis.exceptions import AskError, MovedError, ResponseError

from dlock._pure import ack as _ack
from dlock._pure.cluster import MAX_REDIRECTS, Redirect, SlotMap, Topology, redirect, slot_of, with_asking
from dlock._pure.connect import Login, Security
from dlock._pure.replies import answer
from dlock._pure.urls import cluster_master_kwargs, cluster_seed
from dlock.errors import NodeFailure


def test_slots_match_the_cluster_spec_and_hash_tags() -> None:
    assert slot_of("123456789") == 0x31C3
    assert slot_of("foo") == 12182
    assert slot_of("{user1000}.following") == slot_of("user1000")
    assert slot_of("foo{}{bar}") != slot_of("bar")  # an empty tag is no tag
    assert slot_of("foo{{bar}}zap") == slot_of("{bar")


def range_(start: int, end: int, host: bytes, port: int) -> list[object]:
    return [start, end, [host, port, b"id"], [b"10.9.9.9", 7999, b"replica"]]


def test_a_slot_map_finds_the_master_of_each_slot() -> None:
    reply = [range_(5461, 10922, b"10.0.0.2", 7001), range_(0, 5460, b"", 7000), range_(10923, 16383, b"::1", 7002)]
    slots = SlotMap.parse(reply, "seed.example")
    assert slots.master(0) == "seed.example:7000"  # announced without a host: the one asked
    assert slots.master(5461) == "10.0.0.2:7001"
    assert slots.master(16383) == "[::1]:7002"


def test_unserved_slots_and_bad_replies_are_told_apart() -> None:
    slots = SlotMap.parse([range_(100, 200, b"h", 1)], "x")
    assert slots.master(99) is None and slots.master(201) is None
    for bad in ([], 3, [range_(0, 16384, b"h", 1)], [[0, 5, "not a list"]]):
        with pytest.raises(ValueError, match="CLUSTER SLOTS"):
            SlotMap.parse(bad, "x")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+cluster://alice@10.0.0.1:7000", "a user name needs a password"),
        ("redis+cluster://10.0.0.1:7000/2", "only database 0"),
        ("redis+cluster://:7000", "a host is required"),
        ("redis+cluster://10.0.0.1:port", "bad port"),
        ("redis+cluster://10.0.0.1:7000?db=3", "query parameters"),
        ("redis://10.0.0.1:7000", "expected redis\\+cluster://host:port"),
    ],
)
def test_cluster_urls_are_checked_before_any_connection(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        cluster_seed(url)


def test_masters_are_reached_with_the_seeds_credentials_and_tls() -> None:
    seed = cluster_seed("redis+cluster://alice:s%40cret@10.0.0.1:7000/0")
    assert (seed.address, seed.tls, seed.login) == ("10.0.0.1:7000", False, Login("alice", "s@cret"))
    assert seed.name == "redis+cluster://alice:***@10.0.0.1:7000/0" and "cret" not in repr(seed)
    kwargs = cluster_master_kwargs(seed, "10.0.0.2:7001", Security(login=Login("bob", "other")))
    assert kwargs == {"host": "10.0.0.2", "port": 7001, "username": "alice", "password": "s@cret"}
    bare = cluster_seed("rediss+cluster://[::1]:7000")
    assert bare.tls and bare.login == Login()
    kwargs = cluster_master_kwargs(bare, "[::1]:7001", Security(login=Login("bob", "other")))
    assert kwargs == {"host": "::1", "port": 7001, "username": "bob", "password": "other"}


def test_redirects_are_read_from_redis_pys_errors() -> None:
    assert redirect(MovedError("3999 127.0.0.1:6381")) == Redirect("127.0.0.1:6381", ask=False)
    assert redirect(AskError("3999 ::1:6381")) == Redirect("[::1]:6381", ask=True)
    assert redirect(ResponseError("ERR nope")) is None
    assert redirect(7) is None
    assert with_asking((("GET", "k"),), True) == (("ASKING",), ("GET", "k"))


def test_moved_forgets_the_map_ask_does_not_and_redirects_are_bounded() -> None:
    topology = Topology(cluster_seed("redis+cluster://127.0.0.1:7000"), lambda address: address)
    assert topology.learn(SlotMap([(0, 16383, "127.0.0.1:7001")]), "r") == "127.0.0.1:7001"
    assert topology.follow(Redirect("127.0.0.1:7002", ask=True), 0) == "127.0.0.1:7002"
    assert topology.known_master_of("r") == "127.0.0.1:7001"
    assert topology.follow(Redirect("127.0.0.1:7002", ask=False), 1) == "127.0.0.1:7002"
    assert topology.known_master_of("r") is None
    assert topology.follow(Redirect("127.0.0.1:7002", ask=False), MAX_REDIRECTS) is None
    assert topology.master("127.0.0.1:7002") == "127.0.0.1:7002"
    assert topology.to_ask_for_slots() == ["127.0.0.1:7002", "127.0.0.1:7000"]  # known first, seed last
    topology.learn(SlotMap([(0, 16383, "127.0.0.1:7002")]), "r")
    assert topology.forget_master("127.0.0.1:7002") is not None
    assert topology.known_master_of("r") is None  # a master gone quiet: read the map again


ACK = _ack.Ack(2, 0.1)
EXTEND = ("DLOCK.EXTEND", "r", "o", 1000)


def test_writes_are_followed_by_wait_and_a_release_is_not() -> None:
    assert _ack.commands(EXTEND, ACK) == (EXTEND, ("WAIT", 2, 100))
    assert _ack.commands(EXTEND, None) == (EXTEND,)
    wait = ("DLOCK.ACQUIRE", "r", "o", 1000, "WAIT", 500, "TICKET", 7)
    assert [c[0] for c in _ack.commands(wait, ACK)] == ["DLOCK.ACQUIRE", "WAIT"]
    assert _ack.commands(("DLOCK.FENCE", "r", "o", 5), ACK)[1][0] == "WAIT"
    assert _ack.commands(("DLOCK.RELEASE", "r", "o"), ACK) == (("DLOCK.RELEASE", "r", "o"),)
    assert _ack.extra_time(EXTEND, ACK) == pytest.approx(0.2)  # the server's 100 ms tick included
    assert _ack.extra_time(("DLOCK.RELEASE", "r", "o"), ACK) == 0.0


def test_a_write_short_of_acknowledgements_is_a_failure_that_says_how_short() -> None:
    assert answer("n", EXTEND, [1, 2], ACK) == 1
    assert answer("n", EXTEND, [1, 1], ACK) == NodeFailure(
        "n", "extended but only 1 of 2 replicas acknowledged within 100 ms"
    )
    assert answer("n", EXTEND, [0, 0], ACK) == 0  # nothing written (not held): nothing to acknowledge
    acquire = ("DLOCK.ACQUIRE", "r", "o", 1000)
    assert answer("n", acquire, [None, 0], ACK) is None
    assert answer("n", acquire, [17, 0], ACK) == NodeFailure(
        "n", "granted but only 0 of 2 replicas acknowledged within 100 ms"
    )
    fence = ("DLOCK.FENCE", "r", "o", 17)
    assert "committed but only 1 of 2" in str(answer("n", fence, [1, 1], ACK))
    failed = answer("c", acquire, [ResponseError("TRYAGAIN later"), 2], ACK, via="master m: ")
    assert failed == NodeFailure("c", "master m: TRYAGAIN later")


def test_replica_ack_per_node_kind() -> None:
    assert _ack.for_node("auto", 0.1, replicated=True) == _ack.Ack(1, 0.1)
    assert _ack.for_node("auto", 0.1, replicated=False) is None
    assert _ack.for_node("off", 0.1, replicated=True) is None
    assert _ack.for_node(0, 0.1, replicated=True) is None
    assert _ack.for_node(2, 0.05, replicated=False) == _ack.Ack(2, 0.05)
    assert _ack.Ack(1, 0.0004).ms == 1  # WAIT 0 would block for ever
