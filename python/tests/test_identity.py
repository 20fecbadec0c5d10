"""One server never counts twice (issue 48, finding 6; client/tests/identity.rs): nodes are told
apart by the server's run_id, not by their URLs' text. The same server as localhost and as
127.0.0.1, through Sentinel and directly, or through two seeds of one Redis Cluster is refused
with ValueError naming both nodes, in both flavours; distinct servers, and a server restarted (a
new run_id), still work; a user without DLOCK.RUNID is told what to allow, and INFO server is read
instead where the module has no DLOCK.RUNID."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import pytest
from cluster import Cluster, Server, launch
from conftest import eventually, free_everywhere
from secure import PASSWORD, USER
from sentinel import SENTINEL_PASSWORD, SentinelDeployment

import dlock
import dlock.asyncio
from dlock._pure.identity import unknown_command


def said(first: str, second: str) -> str:
    return f"nodes {first} and {second} are the same server (run_id "


def names(server: Server) -> tuple[str, str]:
    """One server under two names."""
    return f"redis://127.0.0.1:{server.port}", f"redis://localhost:{server.port}"


def test_localhost_and_127_0_0_1_are_one_server_and_no_quorum_is_made_of_it(three: list[Server]) -> None:
    a, x = three[0], three[1]
    by_ip, by_name = names(a)
    # The repro: A twice and X, quorum 2: A alone made the quorum twice over. Each
    # manager's first call is the one refused, and leaves nothing held.
    for waiting in (False, True):
        for _ in range(3):
            with dlock.LockManager([by_ip, by_name, x.url], timeout=0.5) as locks:
                with pytest.raises(ValueError) as refused:
                    locks.lock("r", ttl=10.0, wait=2.0) if waiting else locks.try_lock("r", ttl=10.0)
                assert said(by_ip, by_name) in str(refused.value)
                assert str(refused.value).endswith("): list each server once")
                eventually(lambda: free_everywhere([a, x], "r"), what="nothing left held")
    # Named in the order given, whichever connected first; refused again without asking.
    with dlock.LockManager([by_name, by_ip, x.url], timeout=0.5) as locks:
        for _ in range(2):
            with pytest.raises(ValueError, match=re.escape(said(by_name, by_ip))):
                locks.try_lock("r")


def test_the_asyncio_flavour_refuses_it_too(three: list[Server]) -> None:
    a, x = three[0], three[1]
    by_ip, by_name = names(a)

    async def refused(waiting: bool) -> str:
        async with dlock.asyncio.LockManager([by_ip, by_name, x.url], timeout=0.5) as locks:
            with pytest.raises(ValueError) as caught:
                await (locks.lock("r", ttl=10.0, wait=2.0) if waiting else locks.try_lock("r", ttl=10.0))
            with pytest.raises(ValueError):
                await locks.try_lock("r")  # and at once from then on
            return str(caught.value)

    for waiting in (False, True, False, True):
        assert said(by_ip, by_name) in asyncio.run(refused(waiting))
        eventually(lambda: free_everywhere([a, x], "r"), what="nothing left held")


def test_distinct_servers_still_make_a_quorum_and_a_restart_is_not_a_duplicate(three: list[Server]) -> None:
    with dlock.LockManager([s.url for s in three], timeout=0.5) as locks:
        locks.try_lock("r").release()
        three[0].restart()  # a new process, a new run_id, at the same address
        locks.lock("r", wait=5.0).release()


def test_a_url_given_twice_is_refused_when_the_manager_is_made() -> None:
    twice = re.escape("node redis://127.0.0.1:1 is given twice: list each server once")
    for manager in (dlock.LockManager, dlock.asyncio.LockManager):
        with pytest.raises(ValueError, match=twice):
            manager(["redis://127.0.0.1:1", "redis://127.0.0.1:1"])  # type: ignore[arg-type]


LOCKER = ["on", ">secret", "resetkeys", "~*", "-@all"]


def test_a_user_without_dlock_runid_is_told_what_to_allow_and_needs_no_info(one: Server) -> None:
    commands = ["+dlock.acquire", "+dlock.release", "+dlock.fence"]
    one.client().execute_command("ACL", "SETUSER", "locker", *LOCKER, *commands)
    with dlock.LockManager([one.url], timeout=0.5, username="locker", password="secret") as locks:
        with pytest.raises(dlock.NoQuorum) as refused:
            locks.try_lock("r")
        assert "cannot tell which server this is (DLOCK.RUNID refused: NOPERM" in str(refused.value)
        assert "allow the user DLOCK.RUNID (+dlock.runid" in str(refused.value)
        one.client().execute_command("ACL", "SETUSER", "locker", "+dlock.runid")  # not INFO
        locks.try_lock("r").release()


def test_a_user_without_dlock_runid_waiting_a_minute_is_refused_at_once(one: Server) -> None:
    """A refusal waiting cannot cure ends the wait (conformance/README.md): the node is not
    connected to again within the call, so the ACL log holds a refusal or two, not one a retry
    pause for a minute (issue 48: ~50 a second). Redis folds like entries into one: count them."""
    one.client().execute_command("ACL", "SETUSER", "locker", *LOCKER, "+dlock.acquire", "+dlock.release")
    one.client().acl_log_reset()
    with dlock.LockManager([one.url], timeout=0.5, username="locker", password="secret") as locks:
        started = time.monotonic()
        with pytest.raises(dlock.NoQuorum, match=r"DLOCK\.RUNID refused: NOPERM"):
            locks.lock("r", wait=60.0)
        assert time.monotonic() - started < 3.0
    refusals = sum(int(entry["count"]) for entry in one.client().acl_log())
    assert 1 <= refusals <= 3, refusals


@pytest.fixture
def old() -> Iterator[Server]:
    """A server without DLOCK.RUNID (a module older than it; here none at all)."""
    server = Server()
    server.module = False
    launch([server])
    yield server
    server.stop()


def test_without_dlock_runid_info_server_tells_servers_apart(old: Server) -> None:
    by_ip, by_name = names(old)
    refusal = pytest.raises(ValueError, match=re.escape(said(by_ip, by_name)))
    with dlock.LockManager([by_ip, by_name], timeout=0.5) as locks, refusal:
        locks.try_lock("r")

    async def refused() -> str:
        async with dlock.asyncio.LockManager([by_ip, by_name], timeout=0.5) as locks:
            with pytest.raises(ValueError) as caught:
                await locks.try_lock("r")
            return str(caught.value)

    assert said(by_ip, by_name) in asyncio.run(refused())
    old.client().execute_command("ACL", "SETUSER", "locker", *LOCKER, "+ping")
    with dlock.LockManager([old.url], timeout=0.5, username="locker", password="secret") as locks:
        with pytest.raises(dlock.NoQuorum) as refused:
            locks.try_lock("r")
        assert "cannot tell which server this is (INFO server refused: NOPERM" in str(refused.value)
        assert "allow the user INFO (+info)" in str(refused.value)


@pytest.fixture
def deployment() -> Iterator[SentinelDeployment]:
    started = SentinelDeployment().start()
    yield started
    started.stop()


def test_a_sentinel_master_given_directly_too_is_refused(deployment: SentinelDeployment) -> None:
    group, master = deployment.url(), deployment.master.url
    login = {"username": USER, "password": PASSWORD, "sentinel_password": SENTINEL_PASSWORD}
    locks = dlock.LockManager([group, master], timeout=0.5, ack_timeout=2.0, **login)  # type: ignore[arg-type]
    with locks, pytest.raises(ValueError, match=re.escape(said(group, master))):
        locks.try_lock("r")


def test_two_seeds_of_one_cluster_are_refused(redis_cluster: Cluster) -> None:
    first, second = redis_cluster.url(redis_cluster.nodes[0]), redis_cluster.url(redis_cluster.nodes[1])
    locks = dlock.LockManager([first, second], timeout=0.5, replica_ack="off")
    with locks, pytest.raises(ValueError, match=re.escape(said(first, second))):
        locks.try_lock("r")


def test_an_unknown_command_is_told_from_a_refusal() -> None:
    for unknown in ("unknown command 'DLOCK.RUNID', with args beginning with: ", "ERR unknown command 'x'"):
        assert unknown_command(unknown)
    assert not unknown_command("NOPERM User app has no permissions to run the 'dlock.runid' command")
