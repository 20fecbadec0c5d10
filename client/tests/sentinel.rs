//! A `redis+sentinel://` node against real Redis Sentinels (a master and its replica with the
//! module, three sentinels): it follows the master through `SENTINEL FAILOVER` and through a
//! `kill -9` of the master, a lock acknowledged by the replica survives the crash, tokens never
//! go back, and a client still holding the old master's address recovers without a restart.

use crate::common::*;

use std::time::Duration;

use dlock_client::{Error, LockManager, ReplicaAck};
use dlock_testkit::Sentinels;

/// Grants that must count get room for the replica's acknowledgement on a loaded machine.
const PATIENT_ACK: ReplicaAck = ReplicaAck::Auto {
    timeout: Duration::from_secs(2),
};

fn manager(set: &Sentinels) -> LockManager {
    LockManager::builder([set.url()])
        .timeout(Duration::from_secs(1))
        .replica_ack(PATIENT_ACK)
        .build()
        .expect("valid sentinel URL")
}

/// Tries `attempts` times: the first call after a failover may still reach the old master,
/// which then answers READONLY or not at all, and makes the node ask the sentinels again.
async fn try_lock_retrying(
    locks: &LockManager,
    resource: &str,
    attempts: u32,
) -> dlock_client::LockGuard {
    let mut last = None;
    for _ in 0..attempts {
        match locks.try_lock(resource, TTL).await {
            Ok(guard) => return guard,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no grant after {attempts} attempts: {last:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_failover_is_followed_and_tokens_keep_rising() {
    let set = Sentinels::start();
    let locks = manager(&set);
    let before = locks
        .try_lock("jobs:1", TTL)
        .await
        .expect("lock on the first master");
    let first_master = set.master().expect("a master");
    assert_eq!(
        token_on(&set.nodes[first_master], "jobs:1"),
        Some(before.token().await.unwrap())
    );

    let new_master = tokio::task::block_in_place(|| set.failover());
    assert_ne!(new_master, first_master);
    // The lock was acknowledged by the replica, now the master: still held there.
    assert_eq!(
        token_on(&set.nodes[new_master], "jobs:1"),
        Some(before.token().await.unwrap())
    );
    // The same manager (its master cached) follows: the old master refuses writes now.
    let after = try_lock_retrying(&locks, "jobs:2", 5).await;
    assert_eq!(
        token_on(&set.nodes[new_master], "jobs:2"),
        Some(after.token().await.unwrap())
    );
    assert!(
        after.token().await.unwrap() > before.token().await.unwrap(),
        "{} after {}",
        after.token().await.unwrap(),
        before.token().await.unwrap()
    );
    before.release().await.expect("release on the new master");
    assert_eq!(token_on(&set.nodes[new_master], "jobs:1"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_survives_the_master_being_killed_and_the_next_token_is_larger() {
    let mut set = Sentinels::start();
    let locks = manager(&set);
    let held = locks.try_lock("jobs:1", TTL).await.expect("lock");
    let old = set.master().expect("a master");
    set.nodes[old].kill();
    let new = 1 - old;
    tokio::task::block_in_place(|| set.wait_master(new, Duration::from_secs(30)));

    assert_eq!(
        token_on(&set.nodes[new], "jobs:1"),
        Some(held.token().await.unwrap()),
        "the grant was acknowledged by the replica, so the promoted replica has it"
    );
    let other = manager(&set);
    match other.try_lock("jobs:1", TTL).await {
        Err(Error::Contended { .. }) => {}
        other => panic!("a second holder after the failover: {other:?}"),
    }
    // New grants need a replica to acknowledge them: the operator brings the dead master
    // back, the sentinels make it a replica of the new master. The first manager still knows
    // the dead master's address; it asks the sentinels again.
    set.nodes[old].restart();
    let next = try_lock_retrying(&locks, "jobs:2", 40).await;
    assert!(
        next.token().await.unwrap() > held.token().await.unwrap(),
        "{} after {}",
        next.token().await.unwrap(),
        held.token().await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sentinel_urls_are_refused_before_anything_connects() {
    for url in [
        "redis+sentinel://127.0.0.1:26379",
        "redis+sentinel://127.0.0.1:26379/",
        "redis+sentinel://127.0.0.1:26379/name?db=1",
    ] {
        match LockManager::new([url]) {
            Err(Error::InvalidArgument(why)) => assert!(why.contains("sentinel URL"), "{why}"),
            other => panic!("{url}: {:?}", other.map(|_| "a manager")),
        }
    }
}
