"""A Redis Cluster as one quorum node, sync client, against a real cluster of 3 masters and 3
replicas: routing from a seed that does not own the slot, a slot migrated under a held lock
(MOVED, and ASK in the migration window), a server-side wait, replica acknowledgement on a
cluster and on a plain master, and quorum across a cluster and plain masters."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from cluster import Cluster, Server
from conftest import eventually, status, waiters

import dlock

SHORTFALL = "granted but only 0 of 1 replicas acknowledged within 100 ms"
#: The acknowledgement timeout of managers whose grants must succeed: the default 100 ms can be
#: missed by a replica on a loaded machine (a CI box running other suites), and a success returns
#: as soon as the replica acknowledges. Refusals keep the default, to stay quick.
ACK_TIMEOUT = 2.0


@contextmanager
def paused(replica: Server, master: Server) -> Iterator[None]:
    """The replica SIGSTOPped for the block; SIGCONT whatever happens in it, then back only once
    it has acknowledged everything its master wrote meanwhile (a replica just resumed can take
    longer than an acknowledgement timeout to catch up)."""
    replica.pause()
    try:
        yield
    finally:
        replica.resume()
        eventually(lambda: caught_up(replica, master), what="the resumed replica to catch up")


def caught_up(replica: Server, master: Server) -> bool:
    """The replica has applied everything its master wrote (by the replica's own account: the
    master learns it at the next WAIT, which asks at once)."""
    applied = replica.client().info("replication").get("slave_repl_offset")
    return applied == master.client().info("replication")["master_repl_offset"]


def asking_count(server: Server) -> int:
    stats = server.client().info("commandstats")
    return int(stats.get("cmdstat_asking", {}).get("calls", 0))


def test_lock_extend_release_through_a_seed_that_does_not_own_the_slot(redis_cluster: Cluster) -> None:
    seed = redis_cluster.nodes[0]
    key = redis_cluster.key_not_on(seed, "routed")
    owner = redis_cluster.master_for(key)
    with dlock.LockManager([redis_cluster.url(seed)], ack_timeout=ACK_TIMEOUT) as locks:
        lock = locks.lock(key, ttl=2.0, wait=1.0)
        held = status(owner, key)
        assert held is not None and held["owner"] == lock.owner
        assert held["token"] == lock.token()  # the token is the owning shard's
        lock.extend(ttl=30.0)
        held = status(owner, key)
        assert held is not None and int(str(held["ttl"])) > 20_000
        [node_status] = locks.status(key)
        assert node_status.info is not None and node_status.info.token == lock.token()
        lock.release()
        assert status(owner, key) is None


def test_a_slot_migrated_under_a_held_lock_is_followed_by_moved_and_ask(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "migrating")
    source = redis_cluster.master_for(key)
    target = redis_cluster.other_master(source)
    with dlock.LockManager([redis_cluster.url()], timeout=0.5, ack_timeout=ACK_TIMEOUT) as locks:
        lock = locks.try_lock(key, ttl=30.0)
        asked_before = asking_count(target)

        def in_the_ask_window() -> None:
            lock.extend(ttl=20.0)  # the client's map still says `source`: ASK, then ASKING on target
            assert asking_count(target) > asked_before
            with pytest.raises(dlock.LockContended):
                locks.try_lock(key)  # held there: a refusal, not a failure

        redis_cluster.migrate_slot(key, source, target, in_the_ask_window)
        held = status(target, key)
        assert held is not None and held["token"] == lock.token() and int(str(held["ttl"])) <= 20_000
        lock.extend(ttl=30.0)  # MOVED: the map is read again
        assert redis_cluster.master_for(key) is target
        lock.release()
        assert status(target, key) is None
        assert locks.try_lock(key).token() > lock.token()  # one node: nothing owed, read after the release


def test_a_server_side_wait_on_a_cluster_node_is_handed_the_lock(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "waited")
    owner = redis_cluster.master_for(key)
    with dlock.LockManager([redis_cluster.url()], ack_timeout=ACK_TIMEOUT) as locks:
        holder = locks.try_lock(key, ttl=30.0)
        got: list[dlock.Lock] = []
        waiter = threading.Thread(target=lambda: got.append(locks.lock(key, ttl=5.0, wait=10.0)))
        waiter.start()
        try:
            eventually(lambda: len(waiters(owner, key)) == 1, what="the waiter queued on the owning shard")
        finally:
            holder.release()
            waiter.join(10)
        assert got and got[0].token() > holder.token()
        got[0].release()


def test_a_paused_replica_refuses_grants_and_acknowledgement_off_takes_them(redis_cluster: Cluster) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "acked")
    owner = redis_cluster.master_for(key)
    replica = redis_cluster.replica_of(owner)
    with (
        dlock.LockManager([redis_cluster.url()]) as acked,
        dlock.LockManager([redis_cluster.url()], replica_ack="off") as unacked,
        paused(replica, owner),
    ):
        with pytest.raises(dlock.NoQuorum, match=SHORTFALL) as refused:
            acked.try_lock(key)
        assert [f.node for f in refused.value.failures] == [redis_cluster.url()]
        assert status(owner, key) is None  # the unacknowledged grant was released
        with pytest.raises(dlock.NoQuorum, match=SHORTFALL):
            acked.lock(key, wait=0.3)  # the server-side wait is acknowledged too
        assert status(owner, key) is None
        lock = unacked.try_lock(key)
        lock.release()
    with dlock.LockManager([redis_cluster.url()], ack_timeout=ACK_TIMEOUT) as patient, patient.try_lock(key):
        assert status(owner, key) is not None  # the replica back: granted with acknowledgement


def test_quorum_across_a_cluster_and_plain_masters(redis_cluster: Cluster, three: list[Server]) -> None:
    key = redis_cluster.key_not_on(redis_cluster.nodes[0], "mixed")
    shard = redis_cluster.master_for(key)
    plain = three[:2]
    nodes = [redis_cluster.url(), *(s.url for s in plain)]
    with dlock.LockManager(nodes, ack_timeout=ACK_TIMEOUT) as locks, locks.try_lock(key) as lock:
        token = lock.token()  # committed when read
        tokens = {str(status(server, key)["token"]) for server in (shard, *plain)}  # type: ignore[index]
        assert tokens == {str(token)}  # one committed token on the shard and both masters
    with paused(redis_cluster.replica_of(shard), shard), dlock.LockManager(nodes) as locks:
        plain[1].kill()
        with pytest.raises(dlock.NoQuorum, match=SHORTFALL):
            locks.try_lock(key)  # the shard's unacknowledged grant does not count towards 2 of 3


def test_a_plain_master_with_replica_ack_1(master_with_replica: tuple[Server, Server]) -> None:
    master, replica = master_with_replica
    with dlock.LockManager([master.url], replica_ack=1) as locks:
        with paused(replica, master), pytest.raises(dlock.NoQuorum, match=SHORTFALL):
            locks.try_lock("plain-acked")
        assert status(master, "plain-acked") is None
    with (
        dlock.LockManager([master.url], replica_ack=1, ack_timeout=ACK_TIMEOUT) as locks,
        locks.try_lock("plain-acked") as lock,
    ):
        assert lock.token() > 0
        lock.extend()
    with dlock.LockManager([master.url]) as default, paused(replica, master), default.try_lock("plain-acked"):
        pass  # "auto" asks nothing of a plain master


def test_a_killed_master_is_dropped_and_its_promoted_replica_serves_the_lock() -> None:
    """A cluster of its own (the session's stays whole): the lock's master killed, its replica
        promoted. The client's first call after goes to the dead master (its map is stale) and fails
        naming it; that drops the master and the map, so the next call reads the map again and
        finds the lock, acknowledged before the failover, on the promoted replica. That shard has no
    replica left, so acknowledged grants are refused there until one is back."""
    cluster = Cluster().start()
    try:
        key = "failover"
        master = cluster.master_for(key)
        replica = cluster.replica_of(master)
        seed = cluster.other_master(master)
        with dlock.LockManager([cluster.url(seed)], timeout=0.5, ack_timeout=ACK_TIMEOUT) as locks:
            lock = locks.try_lock(key, ttl=60.0)  # acknowledged by the replica ("auto" on clusters)
            master.kill()
            eventually(lambda: replica.client().info("replication")["role"] == "master", within=20.0, what="promotion")
            cluster.wait_ok()
            [stale] = locks.status(key)
            assert stale.failure is not None and f"master 127.0.0.1:{master.port}" in stale.failure
            [fresh] = locks.status(key)
            assert fresh.info is not None and (fresh.info.owner, fresh.info.token) == (lock.owner, lock.token())
            lock.release()
            assert status(replica, key) is None
        with dlock.LockManager([cluster.url(seed)]) as quick, pytest.raises(dlock.NoQuorum, match=SHORTFALL):
            quick.try_lock(key)  # the promoted master has no replica left to acknowledge
        assert status(replica, key) is None
        with dlock.LockManager([cluster.url(seed)], replica_ack="off") as unacked, unacked.try_lock(key) as after:
            assert after.token() > lock.token()  # the token order holds across the failover
    finally:
        cluster.stop()
