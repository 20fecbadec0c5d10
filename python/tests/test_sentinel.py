"""A Redis Sentinel deployment as one quorum node (`redis+sentinel://`): a master and a replica
with the module and an ACL user, three sentinels with a password of their own. The client asks
the sentinels for the master, checks it with ROLE, asks for one replica's acknowledgement
(replica_ack "auto"), and follows a failover, SENTINEL FAILOVER and kill -9 alike, without being
restarted: a lock held before is still held after, and tokens never go back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import redis.sentinel
from conftest import eventually
from secure import PASSWORD, USER, ACLServer, Pki, TLSServer, tls_keywords
from sentinel import MASTER_NAME, SENTINEL_PASSWORD, SentinelDeployment

import dlock
import dlock.asyncio


@pytest.fixture
def deployment() -> Iterator[SentinelDeployment]:
    started = SentinelDeployment().start()
    yield started
    started.stop()


def keywords(**overrides: object) -> dict[str, object]:
    """Grants must be acknowledged by the replica: 2 s for it (100 ms can be missed on a loaded
    machine, as in the cluster tests)."""
    given = {"username": USER, "password": PASSWORD, "sentinel_password": SENTINEL_PASSWORD}
    return {**given, "timeout": 0.5, "ack_timeout": 2.0, **overrides}


def held(server: ACLServer | TLSServer, key: str) -> int | None:
    """The token `server` holds `key` with, by its own account."""
    reply = server.client().execute_command("DLOCK.STATUS", key)
    return None if reply is None else int(dict(zip(reply[::2], reply[1::2], strict=True))[b"token"])


def demote(old: ACLServer | TLSServer, new: ACLServer | TLSServer) -> None:
    """What the sentinels do to a former master some seconds after a failover (8 s at least),
    done at once: it replicates the new master."""
    old.client().execute_command("REPLICAOF", "127.0.0.1", new.port)
    eventually(lambda: old.client().info("replication").get("master_link_status") == "up", 10, "demoted")


def test_locks_on_the_master_the_sentinels_name_acknowledged_by_its_replica(deployment: SentinelDeployment) -> None:
    locks = dlock.LockManager([deployment.url()], **keywords())  # type: ignore[arg-type]
    assert locks.nodes == [deployment.url()]
    with locks.lock("s", ttl=10.0, wait=1.0) as lock:
        assert held(deployment.master, "s") == held(deployment.replica, "s") == lock.token()  # acknowledged
        assert [v.info.token for v in locks.status("s") if v.info] == [lock.token()]
        lock.extend(20.0)
        assert deployment.replica.client().pttl("s") > 19_000
    assert held(deployment.master, "s") is None
    sentinels = redis.sentinel.Sentinel(
        [("127.0.0.1", s.port) for s in deployment.sentinels], sentinel_kwargs={"password": SENTINEL_PASSWORD}
    )
    ready = dlock.LockManager([sentinels.master_for(MASTER_NAME, username=USER, password=PASSWORD)], ack_timeout=2.0)
    assert ready.nodes == [deployment.url()]  # a ready-made sentinel client: replica_ack "auto" is 1 too
    with ready.lock("s", ttl=10.0) as lock:
        assert held(deployment.replica, "s") == lock.token()
    deployment.replica.pause()  # no acknowledgement: no lock, and nothing left behind
    try:
        with pytest.raises(dlock.NoQuorum, match="granted but only 0 of 1 replicas acknowledged"):
            dlock.LockManager([deployment.url()], **keywords(ack_timeout=0.1)).try_lock("s")  # type: ignore[arg-type]
        assert held(deployment.master, "s") is None
    finally:
        deployment.replica.resume()
    locks.close()


def test_a_sentinel_failover_is_followed_by_a_client_holding_the_old_master(deployment: SentinelDeployment) -> None:
    old, new = deployment.master, deployment.replica
    stale = dlock.LockManager([deployment.url()], **keywords())  # type: ignore[arg-type]
    lock = stale.try_lock("f", ttl=30.0)  # its idle connections stay on the old master
    deployment.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", MASTER_NAME)
    deployment.wait_for_master(new.port)
    # Until the old master replicates the new one, the new master has no replica to acknowledge:
    # refused, not granted on a master a second failover could lose.
    window = dlock.LockManager([deployment.url()], **keywords(ack_timeout=0.1))  # type: ignore[arg-type]
    with pytest.raises(dlock.NoQuorum, match="only 0 of 1 replicas acknowledged"):
        window.try_lock("g")
    demote(old, new)
    # The stale client's connections now reach a replica: READONLY, asked again, the new master.
    lock.extend(30.0)
    assert "errorstat_READONLY" in old.client().info("errorstats")  # it did ask the old one first
    assert held(new, "f") == lock.token() and held(old, "f") == lock.token()
    lock.release()
    assert stale.try_lock("f", ttl=5.0).token() > lock.token()
    stale.close()
    window.close()


def test_a_sentinel_failover_is_followed_in_asyncio(deployment: SentinelDeployment) -> None:
    old, new = deployment.master, deployment.replica

    async def test() -> None:
        stale = dlock.asyncio.LockManager([deployment.url()], **keywords())  # type: ignore[arg-type]
        lock = await stale.try_lock("f", ttl=30.0)
        deployment.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", MASTER_NAME)
        await asyncio.to_thread(deployment.wait_for_master, new.port)
        await asyncio.to_thread(demote, old, new)
        await lock.extend(30.0)  # READONLY from the old master, then the new one
        assert "errorstat_READONLY" in old.client().info("errorstats")
        assert held(new, "f") == await lock.token()
        await lock.release()
        assert await (await stale.try_lock("f", ttl=5.0)).token() > await lock.token()
        await stale.close()

    asyncio.run(test())


def test_kill_9_of_the_master_keeps_the_lock_and_the_token_order_in_asyncio(deployment: SentinelDeployment) -> None:
    deployment.wait_for_each_other()  # to agree that the master is down, and on who fails it over
    old, new = deployment.master, deployment.replica

    async def test() -> None:
        locks = dlock.asyncio.LockManager([deployment.url()], **keywords())  # type: ignore[arg-type]
        lock = await locks.try_lock("k", ttl=30.0)
        old.kill()
        started = time.monotonic()
        views = await locks.status("k")  # the master is gone: a failure at once, no hang
        assert views[0].failure is not None and time.monotonic() - started < 1.0
        await asyncio.to_thread(deployment.wait_for_master, new.port)
        views = await locks.status("k")  # on the promoted replica, which had acknowledged it
        assert views[0].info is not None and views[0].info.token == await lock.token()
        with pytest.raises(dlock.NoQuorum, match="only 0 of 1 replicas acknowledged"):
            await lock.extend(30.0)  # no replica left to acknowledge
        old.restart()  # the old master is back, and replicates the new one
        await asyncio.to_thread(demote, old, new)
        await lock.extend(30.0)
        assert held(new, "k") == await lock.token()
        await lock.release()
        assert await (await locks.try_lock("k", ttl=5.0)).token() > await lock.token()
        await locks.close()

    asyncio.run(test())


def test_tls_sentinels_and_tls_masters(pki: Pki) -> None:
    """rediss+sentinel://: TLS to the sentinels and to the master, with the client certificate."""
    deployment = SentinelDeployment(pki).start()
    try:
        node = [deployment.url("rediss+sentinel")]
        locks = dlock.LockManager(node, **tls_keywords(pki, **keywords()))  # type: ignore[arg-type]
        with locks.lock("t", ttl=10.0, wait=1.0) as lock:
            assert held(deployment.replica, "t") == lock.token()
            assert [v.info.token for v in locks.status("t") if v.info] == [lock.token()]
        untrusted = tls_keywords(pki, **keywords(ssl_ca_certs=pki["other_ca.crt"]))
        with pytest.raises(dlock.NoQuorum, match=r"sentinel 127\.0\.0\.1:\d+: TLS: the server's certificate is not"):
            dlock.LockManager(node, **untrusted).try_lock("t")  # type: ignore[arg-type]
        locks.close()
    finally:
        deployment.stop()


def test_sentinels_that_refuse_or_do_not_know_the_master_are_named(deployment: SentinelDeployment) -> None:
    wrong = dlock.LockManager([deployment.url()], **keywords(sentinel_password="not-it"))  # type: ignore[arg-type]
    with pytest.raises(dlock.NoQuorum) as caught:
        wrong.try_lock("r")
    said = caught.value.failures[0].reason
    assert f"no sentinel names a master for '{MASTER_NAME}'" in said
    assert said.count("authentication failed") == 3 and "not-it" not in said and SENTINEL_PASSWORD not in said
    unknown = deployment.url().replace(f"/{MASTER_NAME}", "/nobody")
    with pytest.raises(dlock.NoQuorum, match="No such master with that name"):
        dlock.LockManager([unknown], **keywords()).try_lock("r")  # type: ignore[arg-type]
