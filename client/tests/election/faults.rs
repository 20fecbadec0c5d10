//! Leadership under faults on real nodes: a leader cut off from a minority of its nodes keeps
//! leading (and is still seen leading, though the late grants' tokens differ from its epoch),
//! from a majority loses it at the renew deadline; an observer carries on across a node's
//! restart (an unknown while it is down, then what the node holds).

use crate::common::*;

use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager, Observer};

const LEASE: Duration = Duration::from_millis(1500);

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(20), f)
}

fn quick(servers: &[Server]) -> LockManager {
    LockManager::builder(urls(servers))
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_minority_down_keeps_the_leader_a_majority_down_ends_it() {
    let mut servers = nodes(5);
    let locks = quick(&servers);
    let leading = locks.campaign("cut", "v", LEASE).await.unwrap();
    // Two nodes down, whichever held the epoch: the leader still holds on three.
    servers[0].kill();
    servers[1].kill();
    tokio::time::sleep(LEASE * 2).await;
    assert!(!leading.is_lost(), "three of five nodes still extend it");
    let leader = locks
        .leader("cut")
        .await
        .unwrap()
        .expect("still seen leading");
    // The id and value, not the epoch: a node that answered the grant after the 200 ms
    // timeout holds its own token, never fenced, and with two committed nodes down the leader
    // rule may show that one (the smallest held, conformance/leaders.json).
    assert_eq!(
        (leader.id.as_str(), leader.value.as_str()),
        (leading.id(), "v")
    );
    servers[2].kill();
    let cut = Instant::now();
    bounded(leading.lost()).await.expect("lost in time");
    assert!(
        cut.elapsed() < LEASE,
        "at the renew deadline: {:?}",
        cut.elapsed()
    );
    assert!(matches!(
        locks.leader("cut").await,
        Err(Error::NoQuorum { .. })
    ));
}

async fn next(observer: &mut Observer) -> Result<Option<dlock_client::Leader>, Error> {
    bounded(observer.next())
        .await
        .expect("a change within 20 s")
        .expect("the observer runs")
}

#[tokio::test]
async fn an_observer_carries_on_across_a_node_restart() {
    let mut servers = nodes(1);
    let locks = quick(&servers);
    let mut observer = locks.observe("kept").unwrap();
    assert_eq!(next(&mut observer).await.unwrap(), None);
    let leading = locks.campaign("kept", "a", LEASE).await.unwrap();
    assert_eq!(next(&mut observer).await.unwrap().unwrap().value, "a");
    servers[0].restart(); // no persistence: the node comes back empty
                          // Unknown while the node is down, unless the observer's next call reached it restarted.
    let mut after = next(&mut observer).await;
    if matches!(after, Err(Error::NoQuorum { .. })) {
        after = next(&mut observer).await;
    }
    assert_eq!(after.unwrap(), None, "the restarted node holds nothing");
    bounded(leading.lost())
        .await
        .expect("the old leader hears it at its next extension");
    let again = locks.campaign("kept", "b", LEASE).await.unwrap();
    let seen = next(&mut observer).await.unwrap().expect("the new leader");
    assert_eq!((seen.value.as_str(), seen.epoch), ("b", again.epoch()));
    again.resign().await.unwrap();
}
