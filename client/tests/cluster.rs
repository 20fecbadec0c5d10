//! The client against a real Redis Cluster (3 masters, 1 replica each): a `redis+cluster://`
//! URL is one quorum node whose requests go to the master of the resource's slot, and grants
//! count only once a replica acknowledged them.

use crate::common::*;

use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager, ReplicaAck};
use dlock_testkit::Cluster;

/// Acknowledgement for managers whose grants must succeed: the default 100 ms can be missed by a
/// replica on a loaded machine (a CI box), and a success returns as soon as the replica answers.
/// Refusals keep the default, to stay quick.
const PATIENT_ACK: ReplicaAck = ReplicaAck::Auto {
    timeout: Duration::from_secs(2),
};

fn cluster_url(cluster: &Cluster) -> String {
    format!("redis+cluster://127.0.0.1:{}", cluster.nodes[0].port())
}

fn cluster_manager(cluster: &Cluster, ack: ReplicaAck) -> LockManager {
    LockManager::builder([cluster_url(cluster)])
        .timeout(PATIENT)
        .replica_ack(ack)
        .build()
        .expect("valid cluster URL")
}

/// Resources spread over the three shards: the slot owner of each, by the cluster's account.
fn resources_on_every_shard(cluster: &Cluster) -> Vec<(String, usize)> {
    let all: Vec<(String, usize)> = (0..30)
        .map(|i| format!("orders:{i}"))
        .map(|r| {
            let master = cluster.master_for(&r);
            (r, master)
        })
        .collect();
    let mut shards: Vec<usize> = all.iter().map(|(_, m)| *m).collect();
    shards.sort_unstable();
    shards.dedup();
    assert_eq!(shards.len(), 3, "30 keys should cover the three shards");
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lock_lives_on_its_slot_master_and_its_replica_has_it_on_return() {
    let cluster = Cluster::start(3, 1);
    let locks = cluster_manager(&cluster, PATIENT_ACK);
    for (resource, master) in resources_on_every_shard(&cluster) {
        let guard = locks.try_lock(&resource, TTL).await.expect("lock");
        let on_master = token_on(&cluster.nodes[master], &resource);
        assert_eq!(
            on_master,
            Some(guard.token().await.unwrap()),
            "{resource} on its master"
        );
        let replica = &cluster.nodes[cluster.replica_of(master)];
        assert_eq!(
            token_on_replica(replica, &resource),
            Some(guard.token().await.unwrap()),
            "{resource}: acknowledged by the replica before the grant was reported"
        );
        let status = locks.status(&resource).await.expect("a name");
        assert_eq!(status[0].node, cluster_url(&cluster));
        let held = status[0]
            .state
            .clone()
            .expect("reachable")
            .holders
            .remove(0);
        assert_eq!(held.token, guard.token().await.unwrap());
        guard.release().await.expect("release");
        assert_eq!(token_on(&cluster.nodes[master], &resource), None);
    }
}

/// `DLOCK.STATUS` token on a cluster replica, which serves reads only after `READONLY`.
fn token_on_replica(replica: &Server, resource: &str) -> Option<u64> {
    let mut c = replica.conn();
    redis::cmd("READONLY").exec(&mut c).expect("READONLY");
    let fields: Option<Vec<redis::Value>> = redis::cmd("DLOCK.STATUS")
        .arg(resource)
        .query(&mut c)
        .expect("DLOCK.STATUS");
    Some(redis::from_redis_value_ref(&fields?[3]).expect("token"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_cluster_is_served_by_the_slot_master_when_the_holder_releases() {
    let cluster = Cluster::start(3, 1);
    let locks = cluster_manager(&cluster, PATIENT_ACK);
    let master = &cluster.nodes[cluster.master_for("jobs:7")];
    let holder = locks.try_lock("jobs:7", TTL).await.expect("holder");
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { locks.lock("jobs:7", TTL, Duration::from_secs(20)).await }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(master, "jobs:7") != 1 {
        assert!(
            Instant::now() < deadline,
            "the waiter never queued on the slot master"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let released_at = Instant::now();
    let first = holder.token().await.unwrap();
    holder.release().await.expect("release");
    let next = waiter.await.expect("task").expect("granted");
    assert!(
        next.token().await.unwrap() > first,
        "{} after {first}",
        next.token().await.unwrap()
    );
    assert!(
        released_at.elapsed() < Duration::from_secs(2),
        "handed over by the release, not by polling or a TTL: {:?}",
        released_at.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_moving_under_a_held_lock_and_its_waiter_is_followed_by_both() {
    const KEY: &str = "orders:42";
    let cluster = Cluster::start(3, 1);
    let locks = cluster_manager(&cluster, PATIENT_ACK);
    let from = cluster.master_for(KEY);
    let to = (0..3).find(|&i| i != from).expect("another master");
    let holder = locks.try_lock(KEY, TTL).await.expect("holder");
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { locks.lock(KEY, TTL, Duration::from_secs(30)).await }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(&cluster.nodes[from], KEY) != 1 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The waiter gets ASK while the slot migrates and waits on the new owner; the holder's
    // release, sent by the slot map it read before, gets MOVED and follows it.
    cluster.migrate_slot(KEY, from, to, || {
        std::thread::sleep(Duration::from_millis(300))
    });
    let first = holder.token().await.unwrap();
    holder
        .release()
        .await
        .expect("release reaches the new owner");
    let next = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("handed over on the new owner, not left waiting")
        .expect("task")
        .expect("granted");
    let token = next.token().await.unwrap();
    assert!(token > first, "{token} after {first}");
    assert_eq!(token_on(&cluster.nodes[to], KEY), Some(token));
    let left_behind: i64 = redis::cmd("DBSIZE")
        .query(&mut cluster.nodes[from].conn())
        .expect("DBSIZE");
    assert_eq!(left_behind, 0, "no lock left behind on the old owner");
    next.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_master_dies_the_lock_is_found_on_the_promoted_replica() {
    const KEY: &str = "invoices:9";
    let mut cluster = Cluster::start(3, 1);
    let locks = cluster_manager(&cluster, PATIENT_ACK);
    let guard = locks.try_lock(KEY, TTL).await.expect("lock");
    let (owner, first, _) = guard.detach().await.expect("detach");
    let master = cluster.master_for(KEY);
    cluster.nodes[master].kill();
    // The acknowledged grant survived: once the replica is promoted, the client (whose slot
    // map points at the dead master) finds it there and releases it.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        match locks.release_owner(KEY, &owner).await {
            Ok(1) => break,
            other => assert!(Instant::now() < deadline, "not released: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The promoted master has no replica until the old one rejoins: acknowledged grants are
    // refused until the rejoined replica has loaded its copy and acknowledges. Then the shard
    // grants again, above the token from before the failover.
    cluster.nodes[master].restart();
    cluster.wait_ok();
    let next = loop {
        match locks.try_lock(KEY, TTL).await {
            Ok(guard) => break guard,
            Err(e) => assert!(
                Instant::now() < deadline,
                "no grant after the failover: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        next.token().await.unwrap() > first,
        "{} after {first}",
        next.token().await.unwrap()
    );
    next.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_no_replica_acknowledged_is_refused_released_and_named() {
    let cluster = Cluster::start(3, 1);
    let master = cluster.master_for("payments:1");
    let replica = &cluster.nodes[cluster.replica_of(master)];
    replica.pause();
    let locks = cluster_manager(&cluster, ReplicaAck::default());
    let refused = locks.try_lock("payments:1", TTL).await;
    let unacked = LockManager::builder([cluster_url(&cluster)])
        .timeout(PATIENT)
        .replica_ack(ReplicaAck::Off)
        .build()
        .expect("valid")
        .try_lock("payments:1", TTL)
        .await;
    replica.resume();
    match refused {
        Err(Error::NoQuorum { failures, .. }) => {
            let why = &failures[0].reason;
            assert!(why.contains("only 0 of 1 replicas acknowledged"), "{why}");
        }
        other => panic!("expected no quorum, got {other:?}"),
    }
    let unacked = unacked.expect("without acknowledgement the grant counts");
    unacked.release().await.expect("release");
    let guard = cluster_manager(&cluster, PATIENT_ACK)
        .try_lock("payments:1", TTL)
        .await
        .expect("replica back");
    guard.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_on_a_master_with_a_replica_counts_only_once_the_replica_has_it() {
    let master = Server::start();
    let replica = Server::builder()
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start();
    let ack = ReplicaAck::Replicas {
        count: 1,
        timeout: Duration::from_secs(2),
    };
    let locks = LockManager::builder([master.url()])
        .timeout(PATIENT)
        .replica_ack(ack)
        .build()
        .expect("valid");
    let holder = wait_for_replica(&locks).await;
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { locks.lock("batch", TTL, Duration::from_secs(20)).await }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(&master, "batch") != 1 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    replica.pause();
    holder.release().await.expect("release");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let reported_while_paused = waiter.is_finished();
    replica.resume();
    let guard = waiter
        .await
        .expect("task")
        .expect("granted once the replica is back");
    assert!(
        !reported_while_paused,
        "the handed-over grant was reported before the replica had it"
    );
    assert_eq!(
        token_on(&replica, "batch"),
        Some(guard.token().await.unwrap())
    );
}

/// The first lock on a fresh master and replica, taken once the replica is attached.
async fn wait_for_replica(locks: &LockManager) -> dlock_client::LockGuard {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match locks.try_lock("batch", TTL).await {
            Ok(guard) => return guard,
            Err(e) => assert!(Instant::now() < deadline, "replica never acknowledged: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_clusters_are_three_quorum_nodes_with_one_committed_token() {
    let clusters: Vec<Cluster> = (0..3).map(|_| Cluster::start(3, 0)).collect();
    let urls: Vec<String> = clusters.iter().map(cluster_url).collect();
    let locks = LockManager::builder(&urls)
        .timeout(PATIENT)
        .replica_ack(ReplicaAck::Off) // these small clusters have no replicas
        .build()
        .expect("valid");
    let guard = locks.try_lock("ledger", TTL).await.expect("lock");
    let token = guard.token().await.unwrap();
    for cluster in &clusters {
        let master = &cluster.nodes[cluster.master_for("ledger")];
        let fenced = || token_on(master, "ledger") == Some(token);
        eventually("committed everywhere", fenced).await;
    }
    let first = guard.token().await.unwrap();
    guard.release().await.expect("release");

    let mut clusters = clusters;
    for node in &mut clusters[2].nodes {
        node.kill();
    }
    let guard = locks
        .try_lock("ledger", TTL)
        .await
        .expect("two clusters of three");
    assert!(guard.token().await.unwrap() > first);
    guard.release().await.expect("release");

    for node in &mut clusters[1].nodes {
        node.kill();
    }
    match locks.try_lock("ledger", TTL).await {
        Err(Error::NoQuorum { failures, .. }) => {
            let named: Vec<&str> = failures.iter().map(|f| f.node.as_str()).collect();
            assert!(named.contains(&urls[1].as_str()), "{named:?}");
            assert!(named.contains(&urls[2].as_str()), "{named:?}");
        }
        other => panic!("expected no quorum with one cluster of three, got {other:?}"),
    }
}
