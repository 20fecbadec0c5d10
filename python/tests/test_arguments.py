"""Bad arguments are refused with ValueError/TypeError naming what is wrong, before any node is
contacted (the nodes here do not even exist)."""

from __future__ import annotations

import asyncio
import math
import socket

import pytest
from cluster import free_port

import dlock
import dlock.asyncio

NOWHERE = [f"redis://127.0.0.1:{free_port()}"]


@pytest.mark.parametrize(
    ("nodes", "error", "message"),
    [
        ([], ValueError, "at least one"),
        ("redis://127.0.0.1:6379", TypeError, "list of URL strings"),
        ([b"redis://127.0.0.1:6379"], TypeError, "URL string"),
        (["http://127.0.0.1:6379"], ValueError, "has an unknown scheme: use redis://"),
        (["redis+cluster://127.0.0.1:7000/1"], ValueError, "only database 0"),
        (["redis+sentinel://127.0.0.1:26379"], ValueError, "the master's name is required"),
        (["redis+cluster://127.0.0.1:7000?x=1"], ValueError, "query parameters are not supported"),
        (["redis+cluster://:7000"], ValueError, "a host is required"),
        (["redis://a:1", "redis://a:1"], ValueError, "node redis://a:1 is given twice: list each server once"),
    ],
)
def test_bad_node_lists_are_refused(nodes: object, error: type[Exception], message: str) -> None:
    for manager in (dlock.LockManager, dlock.asyncio.LockManager):
        with pytest.raises(error, match=message):
            manager(nodes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "error", "message"),
    [
        ("timeout", 0, ValueError, "timeout must be > 0"),
        ("timeout", "50ms", TypeError, "timeout must be a number"),
        ("retry_count", -1, ValueError, "retry_count must be >= 0"),
        ("retry_count", 1.5, TypeError, "retry_count must be an int"),
        ("retry_delay", -0.1, ValueError, "retry_delay must be >= 0"),
        ("drift_factor", math.nan, ValueError, "drift_factor must be finite"),
        ("fencing", "yes", TypeError, "fencing must be True or False"),
        ("wait_mode", "poll", ValueError, "wait_mode must be 'queue' or 'retry'"),
        ("max_hold", 0, ValueError, "max_hold must be > 0"),
        ("extend_interval", -1, ValueError, "extend_interval must be > 0"),
        ("replica_ack", "all", ValueError, "replica_ack must be 'auto', 'off' or a replica count"),
        ("replica_ack", -1, ValueError, "replica_ack must be a replica count >= 0"),
        ("replica_ack", True, TypeError, "replica_ack must be"),
        ("replica_ack", 1.0, TypeError, "replica_ack must be"),
        ("ack_timeout", 0, ValueError, "ack_timeout must be > 0"),
        ("ack_timeout", "100ms", TypeError, "ack_timeout must be a number"),
        ("drift_factor", 1.0, ValueError, "drift_factor must be below 1"),
        ("timeout", 315_360_000.5, ValueError, r"timeout must be at most 315360000000 ms \(ten years"),
        ("ack_timeout", 1e12, ValueError, "ack_timeout must be at most 315360000000 ms"),
    ],
)
def test_bad_options_are_refused(option: str, value: object, error: type[Exception], message: str) -> None:
    for manager in (dlock.LockManager, dlock.asyncio.LockManager):
        with pytest.raises(error, match=message):
            manager(NOWHERE, **{option: value})  # type: ignore[arg-type]


def test_every_call_refuses_an_empty_name_and_a_ttl_without_validity() -> None:
    locks = dlock.LockManager(NOWHERE)
    calls = [
        (lambda: locks.status(""), "the resource name must not be empty"),
        (lambda: locks.release_owner("", "o"), "the resource name must not be empty"),
        (lambda: locks.extend_owner("r", "o", 0.002), "ttl must be at least 3 ms"),
        (lambda: locks.campaign("e", "", 0.002), "ttl must be at least 3 ms"),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()
    async_locks = dlock.asyncio.LockManager(NOWHERE)
    with pytest.raises(ValueError, match="ttl must be at least 3 ms"):
        asyncio.run(async_locks.campaign("e", "", 0.001))


def test_a_refused_manager_connects_to_nothing() -> None:
    """A listening socket stands for a node: a refused option or cluster URL leaves it unasked."""
    with socket.socket() as node:
        node.bind(("127.0.0.1", 0))
        node.listen()
        node.setblocking(False)
        port = node.getsockname()[1]
        for manager in (dlock.LockManager, dlock.asyncio.LockManager):
            with pytest.raises(ValueError):
                manager([f"redis+cluster://127.0.0.1:{port}", f"redis+cluster://127.0.0.1:{port}/3"])
            with pytest.raises(ValueError):
                manager([f"redis://127.0.0.1:{port}"], replica_ack=-2)
        with pytest.raises(BlockingIOError):
            node.accept()


BAD_CALLS = [
    ({"resource": ""}, ValueError, "the resource name must not be empty"),
    ({"resource": 42}, TypeError, "resource must be a str"),
    ({"ttl": 0}, ValueError, "ttl must be at least 0.001"),
    ({"ttl": -5}, ValueError, "ttl must be at least"),
    ({"ttl": 0.0004}, ValueError, "ttl must be at least"),
    ({"ttl": 10**9}, ValueError, "ttl must be at most"),
    ({"ttl": math.inf}, ValueError, "ttl must be finite"),
    ({"ttl": "10"}, TypeError, "ttl must be a number"),
    ({"ttl": True}, TypeError, "ttl must be a number"),
    ({"ttl": 0.001}, ValueError, "ttl must be at least 3 ms: a shorter one leaves no validity"),
    ({"ttl": 0.0029}, ValueError, r"clock drift allowance \(1% of the TTL \+ 2 ms\), got 2 ms"),
]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        *BAD_CALLS,
        ({"wait": -1}, ValueError, "wait must be >= 0"),
        ({"wait": 315_360_000.001}, ValueError, r"wait must be at most 315360000000 ms \(ten years"),
        ({"wait": math.inf}, ValueError, "wait must be finite"),
    ],
)
def test_bad_lock_arguments_are_refused_before_any_node_is_asked(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    call = {"resource": "r", "ttl": 1.0, "wait": 0.1, **arguments}
    with pytest.raises(error, match=message):
        dlock.LockManager(NOWHERE).lock(**call)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        dlock.asyncio.LockManager(NOWHERE).lock(**call)  # type: ignore[arg-type]


@pytest.mark.parametrize(("arguments", "error", "message"), BAD_CALLS)
def test_bad_try_lock_arguments_are_refused(arguments: dict[str, object], error: type[Exception], message: str) -> None:
    call = {"resource": "r", "ttl": 1.0, **arguments}
    with pytest.raises(error, match=message):
        dlock.LockManager(NOWHERE).try_lock(**call)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        dlock.asyncio.LockManager(NOWHERE).try_lock(**call)  # type: ignore[arg-type]


def test_an_unreachable_node_is_a_lock_error_not_an_argument_error() -> None:
    """The counterpart of the tests above: good arguments do reach the (absent) node."""
    with pytest.raises(dlock.NoQuorum, match="connection refused: is the server running") as caught:
        dlock.LockManager(NOWHERE).try_lock("r", ttl=1.0)
    assert caught.value.failures[0].node == NOWHERE[0]

    async def attempt() -> None:
        await dlock.asyncio.LockManager(NOWHERE).try_lock("r", ttl=1.0)

    with pytest.raises(dlock.NoQuorum, match="connection refused: is the server running"):
        asyncio.run(attempt())


def test_errors_share_one_base_class_and_timeout_is_contended() -> None:
    for error in (dlock.LockContended, dlock.LockTimeout, dlock.NoQuorum, dlock.ValidityExpired, dlock.LockLost):
        assert issubclass(error, dlock.DlockError)
    assert issubclass(dlock.LockTimeout, dlock.LockContended)
    assert issubclass(dlock.LockTimeout, TimeoutError)
    assert not issubclass(dlock.LockContended, TimeoutError)
