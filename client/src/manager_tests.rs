//! LockManager's unit tests over a scripted transport.

use std::sync::Arc;

use redis::Value;

use super::*;
use crate::commands::Request;
use crate::options::{ReplicaAck, WaitMode};
use crate::timing::testing::FakeClock;
use crate::transport::fake::FakeTransport;

/// Held by someone else for the first `busy` attempts on every node, then granted.
fn manager(busy: usize, retry_count: u32) -> (LockManager, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new());
    let transport = FakeTransport::new(3, clock.clone(), move |_, r, attempt| match r {
        Request::Acquire { .. } if attempt < busy => Ok(Value::Nil),
        Request::Acquire { .. } => Ok(Value::Int(7)),
        _ => Ok(Value::Int(1)),
    });
    let opts = Options {
        retry_count,
        wait_mode: WaitMode::Retry,
        ..Options::default()
    };
    (
        LockManager::with_transport(Box::new(transport), opts, Box::new(clock.clone())),
        clock,
    )
}

#[tokio::test(start_paused = true)]
async fn lock_retries_until_granted() {
    let (locks, _) = manager(3, u32::MAX);
    let guard = locks
        .lock("res", Duration::from_secs(10), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(guard.token().await, Ok(7));
    guard.detach().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn lock_gives_up_after_retry_count_and_says_how_often_it_tried() {
    let (locks, _) = manager(10, 2);
    let error = locks
        .lock("res", Duration::from_secs(10), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::Contended {
            resource: "res".into(),
            attempts: 3
        }
    );
}

#[tokio::test(start_paused = true)]
async fn try_lock_is_one_attempt() {
    let (locks, _) = manager(1, u32::MAX);
    let error = locks
        .try_lock("res", Duration::from_secs(10))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::Contended {
            resource: "res".into(),
            attempts: 1
        }
    );
}

#[tokio::test]
async fn a_zero_ttl_is_refused_before_anything_is_sent() {
    let (locks, _) = manager(0, 0);
    assert!(matches!(
        locks.try_lock("res", Duration::ZERO).await,
        Err(Error::InvalidArgument(_))
    ));
}

/// A manager whose every request is recorded, and would be granted.
fn recording() -> (LockManager, Arc<FakeTransport>) {
    let clock = Arc::new(FakeClock::new());
    let transport = Arc::new(FakeTransport::new(3, clock.clone(), |_, _, _| {
        Ok(Value::Int(7))
    }));
    let locks = LockManager::with_transport(
        Box::new(transport.clone()),
        Options::default(),
        Box::new(clock),
    );
    (locks, transport)
}

/// What no node would take, or what could never be valid, is refused before anything is sent:
/// an empty name, a TTL the drift allowance leaves nothing of, a wait beyond ten years.
#[tokio::test]
async fn bad_input_is_refused_before_anything_is_sent() {
    let (locks, transport) = recording();
    let (ttl, wait) = (Duration::from_secs(10), Duration::from_secs(1));
    let refused = [
        locks.try_lock("", ttl).await.map(|_| ()),
        locks.lock("", ttl, wait).await.map(|_| ()),
        locks
            .try_lock("r", Duration::from_millis(2))
            .await
            .map(|_| ()),
        locks
            .lock("r", ttl, crate::MAX_WAIT + Duration::from_millis(1))
            .await
            .map(|_| ()),
        locks.lock("r", ttl, Duration::MAX).await.map(|_| ()),
        locks.release_owner("", "o").await.map(|_| ()),
        locks.extend_owner("", "o", ttl).await.map(|_| ()),
        locks
            .extend_owner("r", "o", Duration::from_millis(1))
            .await
            .map(|_| ()),
        locks.status("").await.map(|_| ()),
        locks
            .campaign("e", "", Duration::from_millis(2))
            .await
            .map(|_| ()),
    ];
    for (i, result) in refused.into_iter().enumerate() {
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{i}: {result:?}"
        );
    }
    assert_eq!(transport.sent(), Vec::new(), "nothing was sent");
}

#[test]
fn the_same_node_twice_is_refused() {
    for urls in [
        ["redis://127.0.0.1:6379", "redis://127.0.0.1:6379"],
        ["redis://127.0.0.1:6379", "REDIS://127.0.0.1:6379"],
        [
            "redis://a:one@127.0.0.1:6379",
            "redis://a:two@127.0.0.1:6379",
        ],
    ] {
        let refused = LockManager::new(urls).err().map(|e| e.to_string());
        let said = refused.unwrap_or_default();
        assert!(
            said.contains("is given twice: list each server once"),
            "{urls:?}: {said}"
        );
        assert!(!said.contains("one@") && !said.contains("two@"), "{said}");
    }
    assert!(LockManager::new(["redis://127.0.0.1:6379", "redis://127.0.0.1:6380"]).is_ok());
}

#[test]
fn durations_beyond_what_the_nodes_take_are_refused_when_the_manager_is_made() {
    let long = crate::MAX_WAIT + Duration::from_millis(1);
    let builders = [
        LockManager::builder(["redis://h:1"]).timeout(long),
        LockManager::builder(["redis://h:1"]).retry_delay(long),
        LockManager::builder(["redis://h:1"]).max_hold(Some(long)),
        LockManager::builder(["redis://h:1"]).replica_ack(ReplicaAck::Replicas {
            count: 1,
            timeout: long,
        }),
        LockManager::builder(["redis://h:1"]).drift_factor(1.0),
    ];
    for builder in builders {
        assert!(matches!(builder.build(), Err(Error::InvalidArgument(_))));
    }
}
