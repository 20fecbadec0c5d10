//! Leader election against real nodes (docs/election.md): campaign, leader, proclaim, resign,
//! the lease-loss contract (nodes frozen: lost at the renew deadline, before the lease ends),
//! and bad input refused before any node is asked; on 1 and 5 masters.

use crate::common::*;

use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager};

const LEASE: Duration = Duration::from_millis(1500);

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(20), f)
}

async fn campaign_resign_handoff(n: usize) {
    let servers = nodes(n);
    let (a, b) = (manager(&servers), manager(&servers));
    assert_eq!(a.leader("jobs").await.unwrap(), None, "nobody leads yet");
    let first = a.campaign("jobs", "10.0.0.1:80", LEASE).await.unwrap();
    let leader = a.leader("jobs").await.unwrap().expect("a leader");
    assert_eq!(
        (leader.value.as_str(), leader.epoch),
        ("10.0.0.1:80", first.epoch())
    );
    assert_eq!(leader.id, first.id());
    let next = tokio::spawn(async move { b.campaign("jobs", "10.0.0.2:80", LEASE).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !next.is_finished(),
        "the second candidate waits while the first leads"
    );
    let first_epoch = first.epoch();
    let resigned = Instant::now();
    first.resign().await.unwrap();
    let second = bounded(next)
        .await
        .expect("elected in time")
        .unwrap()
        .unwrap();
    assert!(
        resigned.elapsed() < Duration::from_millis(1000),
        "handed over at once"
    );
    assert!(
        second.epoch() > first_epoch,
        "epochs rise with every leader"
    );
    let leader = a.leader("jobs").await.unwrap().expect("a leader");
    assert_eq!(
        (leader.value.as_str(), leader.epoch),
        ("10.0.0.2:80", second.epoch())
    );
    second.resign().await.unwrap();
    assert_eq!(a.leader("jobs").await.unwrap(), None);
}

#[tokio::test]
async fn one_master_campaign_resign_handoff() {
    bounded(campaign_resign_handoff(1)).await.unwrap();
}

#[tokio::test]
async fn five_masters_campaign_resign_handoff() {
    bounded(campaign_resign_handoff(5)).await.unwrap();
}

async fn proclaim_keeps_the_epoch(n: usize) {
    let servers = nodes(n);
    let locks = manager(&servers);
    let mut leading = locks.campaign("svc", "v1", LEASE).await.unwrap();
    let epoch = leading.epoch();
    leading.proclaim("v2 with spaces").await.unwrap();
    assert_eq!(leading.value(), "v2 with spaces");
    let leader = locks.leader("svc").await.unwrap().unwrap();
    assert_eq!(
        (leader.value.as_str(), leader.epoch),
        ("v2 with spaces", epoch)
    );
    tokio::time::sleep(LEASE * 2).await;
    assert!(
        !leading.is_lost(),
        "the watchdog still extends under the new value"
    );
    assert_eq!(
        locks.leader("svc").await.unwrap().unwrap().value,
        "v2 with spaces"
    );
    leading.proclaim("").await.unwrap();
    assert_eq!(locks.leader("svc").await.unwrap().unwrap().value, "");
    leading.resign().await.unwrap();
    assert_eq!(locks.leader("svc").await.unwrap(), None);
}

#[tokio::test]
async fn one_master_proclaim_keeps_the_epoch() {
    bounded(proclaim_keeps_the_epoch(1)).await.unwrap();
}

#[tokio::test]
async fn five_masters_proclaim_keeps_the_epoch() {
    bounded(proclaim_keeps_the_epoch(5)).await.unwrap();
}

/// Frozen nodes answer nothing: leadership is declared lost at its renew deadline (a tenth of
/// the lease before validity ends), never after the lease could have ended on the nodes.
#[tokio::test]
async fn frozen_nodes_lose_leadership_at_the_renew_deadline() {
    let servers = nodes(1);
    let locks = LockManager::builder(urls(&servers))
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let leading = locks.campaign("frozen", "", LEASE).await.unwrap();
    let granted = Instant::now();
    servers[0].pause();
    bounded(leading.lost()).await.expect("lost in time");
    let at = granted.elapsed();
    servers[0].resume();
    assert!(
        at < LEASE - LEASE / 10 + Duration::from_millis(100),
        "lost at {at:?}"
    );
    assert!(at > LEASE / 2, "not before the renew deadline: {at:?}");
    assert!(leading.is_lost());
}

/// A leader whose lease was taken over (a force release, then another candidate) hears it from
/// the nodes' refusal at its next extension.
#[tokio::test]
async fn a_refused_extension_is_a_loss_at_once() {
    let servers = nodes(1);
    let locks = manager(&servers);
    let leading = locks.campaign("taken", "", LEASE).await.unwrap();
    let mut c = servers[0].conn();
    let _: i64 = redis::cmd("DLOCK.FORCERELEASE")
        .arg("taken")
        .query(&mut c)
        .unwrap();
    let started = Instant::now();
    bounded(leading.lost()).await.expect("lost in time");
    assert!(
        started.elapsed() < LEASE / 2,
        "at the next extension (every lease / 3)"
    );
}

#[tokio::test]
async fn no_extension_after_resign() {
    let servers = nodes(1);
    let locks = manager(&servers);
    let leading = locks
        .campaign("quiet", "", Duration::from_millis(300))
        .await
        .unwrap();
    let mut monitor = servers[0].conn();
    leading.resign().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["RESETSTAT"])
        .query(&mut monitor)
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut monitor)
        .unwrap();
    assert!(
        !info.contains("dlock.extend"),
        "an extension after resign: {info}"
    );
}

#[tokio::test]
async fn bad_input_is_refused_before_any_node_is_asked() {
    let locks = LockManager::new(["redis://127.0.0.1:1"]).unwrap();
    for result in [
        locks.campaign("", "v", LEASE).await.map(|_| ()),
        locks
            .campaign("e", &"v".repeat(201), LEASE)
            .await
            .map(|_| ()),
        locks.campaign("e", "v", Duration::ZERO).await.map(|_| ()),
        locks.leader("").await.map(|_| ()),
        locks.observe("").map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{result:?}"
        );
    }
}

/// The next change an observer reports, within 10 s.
async fn change(observer: &mut dlock_client::Observer) -> Option<dlock_client::Leader> {
    bounded(observer.next())
        .await
        .expect("a change within 20 s")
        .expect("the observer runs")
        .expect("a quorum answered")
}

async fn observe_every_change(n: usize) {
    let servers = nodes(n);
    let (a, b) = (manager(&servers), manager(&servers));
    let mut observer = a.observe("watched").unwrap();
    assert_eq!(change(&mut observer).await, None, "first: nobody leads");
    let mut first = a.campaign("watched", "one", LEASE).await.unwrap();
    let seen = change(&mut observer).await.expect("the first leader");
    assert_eq!((seen.value.as_str(), seen.epoch), ("one", first.epoch()));
    first.proclaim("uno").await.unwrap();
    let seen = change(&mut observer).await.expect("still the first leader");
    assert_eq!(
        (seen.value.as_str(), seen.epoch),
        ("uno", first.epoch()),
        "same epoch"
    );
    let next = tokio::spawn(async move { b.campaign("watched", "two", LEASE).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first_epoch = first.epoch();
    first.resign().await.unwrap();
    let mut seen = change(&mut observer).await;
    if seen.is_none() {
        assert!(n > 1, "one node hands over in one step");
        seen = change(&mut observer).await; // several: none while the grant is committed
    }
    let second = bounded(next).await.unwrap().unwrap().unwrap();
    let seen = seen.expect("the second leader");
    assert_eq!((seen.value.as_str(), seen.epoch), ("two", second.epoch()));
    assert!(seen.epoch > first_epoch);
    second.resign().await.unwrap();
    assert_eq!(
        change(&mut observer).await,
        None,
        "resigned with nobody queued"
    );
    let quiet = tokio::time::timeout(Duration::from_millis(500), observer.next()).await;
    assert!(quiet.is_err(), "no change, no event: {quiet:?}");
}

#[tokio::test]
async fn one_master_observe_every_change() {
    bounded(observe_every_change(1)).await.unwrap();
}

#[tokio::test]
async fn five_masters_observe_every_change() {
    bounded(observe_every_change(5)).await.unwrap();
}

/// A leader that stops extending (here a raw grant nobody extends) is seen gone at its lease's
/// end, with no command sent to the node.
#[tokio::test]
async fn an_expired_leader_is_seen_gone() {
    let servers = nodes(1);
    let locks = manager(&servers);
    let mut c = servers[0].conn();
    let token: i64 = redis::cmd("DLOCK.ACQUIRE")
        .arg(&["exp", "c0ffee:0 host-a", "400"])
        .query(&mut c)
        .unwrap();
    let mut observer = locks.observe("exp").unwrap();
    let seen = change(&mut observer).await.expect("the raw leader");
    assert_eq!(
        (seen.id.as_str(), seen.value.as_str(), seen.epoch),
        ("c0ffee:0", "host-a", token as u64)
    );
    let started = Instant::now();
    assert_eq!(change(&mut observer).await, None);
    assert!(
        started.elapsed() < Duration::from_millis(400 + 300),
        "{:?}",
        started.elapsed()
    );
}
