//! The client through an atomic slot migration (Redis 8.4+ `CLUSTER MIGRATION IMPORT`, Valkey
//! 9+ `CLUSTER MIGRATESLOTS`): a queued wait answered `MOVED` follows the slot and is granted on
//! the new owner in its turn, and a load of acquire / extend / release on the moving slot goes on
//! with no two holders at once and tokens rising per resource, as a fencing resource sees them.
//!
//! They need the newest servers (`make compat`); elsewhere each says so on stderr and checks
//! nothing.

use crate::common::*;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager, ReplicaAck};
use dlock_testkit::{atomic_migration, AtomicMigration, Cluster, Ended};

fn cluster() -> Option<(Cluster, AtomicMigration)> {
    let probe = Server::start();
    let Some(kind) = atomic_migration(&mut probe.conn()) else {
        eprintln!("skipped: this server has no atomic slot migration (Redis 8.4+, Valkey 9+)");
        return None;
    };
    drop(probe);
    Some((Cluster::start(3, 0), kind))
}

/// A manager on the cluster; its masters have no replicas to acknowledge.
fn manager(cluster: &Cluster) -> LockManager {
    let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes[0].port());
    LockManager::builder([url])
        .timeout(PATIENT)
        .replica_ack(ReplicaAck::Off)
        .build()
        .expect("valid cluster URL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_wait_follows_the_slot_to_its_new_owner() {
    const KEY: &str = "orders:{m}:1";
    let Some((cluster, kind)) = cluster() else {
        return;
    };
    let locks = manager(&cluster);
    let (from, slot) = (cluster.master_for(KEY), cluster.slot(KEY));
    let to = (from + 1) % 3;
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
    let migration = cluster.start_atomic_migration(kind, slot, from, to);
    let (ended, _) = cluster.wait_atomic_migration(&migration, Duration::from_secs(20));
    assert_eq!(ended, Ended::Completed);
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(&cluster.nodes[to], KEY) != 1 {
        assert!(
            Instant::now() < deadline,
            "the redirected waiter never queued on the new owner"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let info: String = redis::cmd("INFO")
        .arg("dlock")
        .query(&mut cluster.nodes[from].conn())
        .unwrap();
    assert!(
        info.contains("dlock_waiters:0\r\n"),
        "nothing left on the old owner:\n{info}"
    );
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
    next.release().await.expect("release");
}

/// What a fencing resource sees: per resource, the highest token written so far, and every
/// write with a lower token refused.
#[derive(Default)]
struct Fenced {
    highest: HashMap<String, u64>,
    holders: HashMap<String, u64>,
    accepted: usize,
    stale: usize,
    overlaps: usize,
    /// Extensions answered "not held" by a majority: a lock lost in the move.
    lost: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_taken_extended_and_released_while_the_slot_moves_stay_exclusive_and_ordered() {
    let Some((cluster, kind)) = cluster() else {
        return;
    };
    let locks = manager(&cluster);
    let resources: Vec<String> = (0..4).map(|i| format!("orders:{{m}}:{i}")).collect();
    let (from, slot) = (
        cluster.master_for(&resources[0]),
        cluster.slot(&resources[0]),
    );
    let to = (from + 1) % 3;
    let fenced = Arc::new(Mutex::new(Fenced::default()));
    let stop = Instant::now() + Duration::from_secs(4);
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let (locks, fenced) = (locks.clone(), fenced.clone());
            let resource = resources[w % resources.len()].clone();
            tokio::spawn(async move { work(&locks, &resource, &fenced, stop).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let migration = cluster.start_atomic_migration(kind, slot, from, to);
    let (ended, _) = tokio::task::block_in_place(|| {
        cluster.wait_atomic_migration(&migration, Duration::from_secs(20))
    });
    assert_eq!(ended, Ended::Completed);
    for worker in workers {
        worker.await.expect("worker");
    }
    let fenced = fenced.lock().unwrap();
    assert!(
        fenced.accepted >= 20,
        "the load ran: {} grants",
        fenced.accepted
    );
    assert_eq!(fenced.overlaps, 0, "two holders of one resource at once");
    assert_eq!(fenced.stale, 0, "a token not above one already written");
    assert_eq!(fenced.lost, 0, "a held lock lost in the move");
    let mut target = cluster.nodes[to].conn();
    let counter: u64 = redis::cmd("DLOCK.COUNTER").query(&mut target).unwrap();
    assert!(
        fenced.highest.values().all(|&t| t <= counter),
        "the new owner's counter covers them"
    );
}

/// Takes, extends and releases `resource` in a loop until `stop`, writing to the fencing
/// resource under each grant.
async fn work(locks: &LockManager, resource: &str, fenced: &Mutex<Fenced>, stop: Instant) {
    while Instant::now() < stop {
        let Ok(mut guard) = locks
            .lock(resource, Duration::from_secs(5), Duration::from_secs(5))
            .await
        else {
            continue;
        };
        write(fenced, resource, guard.token().await.unwrap(), true);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let extended = guard.extend(Duration::from_secs(5)).await;
        write(fenced, resource, guard.token().await.unwrap(), false);
        let _ = guard.release().await;
        // A node that does not answer in time (the source pauses writes while ownership
        // passes; a loaded machine stretches that) fails an extension as NoQuorum, which is
        // safe. A node answering that the holder no longer holds its lock is the bug: the
        // lock was lost on the way to the new owner.
        if let Err(Error::LockLost { .. }) = extended {
            fenced.lock().unwrap().lost += 1;
        }
    }
}

/// One write of `token` to `resource`; `entering` marks the start of a hold, else its end.
fn write(fenced: &Mutex<Fenced>, resource: &str, token: u64, entering: bool) {
    let mut f = fenced.lock().unwrap();
    let highest = f.highest.get(resource).copied().unwrap_or(0);
    if token < highest || (entering && token == highest) {
        f.stale += 1;
        return;
    }
    f.highest.insert(resource.to_string(), token);
    if entering {
        f.accepted += 1;
        if f.holders.insert(resource.to_string(), token).is_some() {
            f.overlaps += 1;
        }
    } else {
        f.holders.remove(resource);
    }
}
