//! Leader election on the other kinds of node: a Redis Cluster (3 masters with a replica each,
//! one `redis+cluster://` node) and a Sentinel-managed master (`redis+sentinel://`), through a
//! failover. Campaign, leader, observe, proclaim, resign handoff.

use std::time::Duration;

use dlock_client::{LockManager, Observer, ReplicaAck};
use dlock_testkit::{Cluster, Sentinels};

const LEASE: Duration = Duration::from_secs(2);

/// Grants must count: room for the replica's acknowledgement on a loaded machine.
fn manager(url: String) -> LockManager {
    LockManager::builder([url])
        .timeout(Duration::from_secs(1))
        .replica_ack(ReplicaAck::Auto {
            timeout: Duration::from_secs(2),
        })
        .build()
        .expect("valid URL")
}

async fn change(observer: &mut Observer) -> Option<dlock_client::Leader> {
    tokio::time::timeout(Duration::from_secs(20), observer.next())
        .await
        .expect("a change within 20 s")
        .expect("the observer runs")
        .expect("the node answered")
}

/// Campaign, observe, proclaim, a handoff at resign, on one node of any kind.
async fn one_term_then_the_next(a: LockManager, b: LockManager, name: &'static str) -> u64 {
    let mut observer = a.observe(name).unwrap();
    assert_eq!(change(&mut observer).await, None);
    let mut first = a.campaign(name, "one", LEASE).await.unwrap();
    assert_eq!(change(&mut observer).await.unwrap().value, "one");
    first.proclaim("uno").await.unwrap();
    let seen = change(&mut observer).await.unwrap();
    assert_eq!((seen.value.as_str(), seen.epoch), ("uno", first.epoch()));
    let next = tokio::spawn(async move { b.campaign(name, "two", LEASE).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first_epoch = first.epoch();
    first.resign().await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(20), next)
        .await
        .expect("elected in time")
        .unwrap()
        .unwrap();
    let seen = change(&mut observer)
        .await
        .expect("one node hands over in one step");
    assert_eq!((seen.value.as_str(), seen.epoch), ("two", second.epoch()));
    assert!(second.epoch() > first_epoch);
    let epoch = second.epoch();
    second.resign().await.unwrap();
    assert_eq!(change(&mut observer).await, None);
    epoch
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_on_a_redis_cluster() {
    let cluster = Cluster::start(3, 1);
    let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes[0].port());
    let (a, b) = (manager(url.clone()), manager(url));
    for name in ["{a}jobs", "{b}jobs", "{c}jobs"] {
        one_term_then_the_next(a.clone(), b.clone(), name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_on_a_sentinel_master_through_a_failover() {
    let set = Sentinels::start();
    let (a, b) = (manager(set.url()), manager(set.url()));
    let before = one_term_then_the_next(a.clone(), b.clone(), "jobs").await;
    set.failover();
    let mut leading = None;
    for _ in 0..50 {
        // The first calls after a failover may still reach the old master (READONLY).
        match a.campaign("jobs", "after", LEASE).await {
            Ok(l) => {
                leading = Some(l);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let leading = leading.expect("elected on the promoted master");
    assert!(
        leading.epoch() > before,
        "epochs keep rising across the failover"
    );
    assert_eq!(a.leader("jobs").await.unwrap().unwrap().value, "after");
    leading.resign().await.unwrap();
}
