//! The node calls against a scripted transport: what each reply is read as, and what a request
//! sent everywhere comes to.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::*;
use crate::options::Options;
use crate::timing::testing::FakeClock;
use crate::transport::fake::FakeTransport;

const TTL: Duration = Duration::from_secs(10);

fn calls_to(
    nodes: usize,
    script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
) -> Calls {
    let clock = Arc::new(FakeClock::new());
    let transport = FakeTransport::new(nodes, clock.clone(), script);
    let backend = Backend::new(Box::new(transport), Options::default(), Box::new(clock));
    Calls::new(Arc::new(backend), "res", LockKind::Exclusive)
}

#[tokio::test]
async fn an_asks_reply_is_a_grant_nil_or_a_failure() {
    let calls = calls_to(4, |n, _, _| match n {
        0 => Ok(Value::Int(7)),
        1 => Ok(Value::Nil),
        2 => Ok(Value::Okay),
        _ => Err("down".into()),
    });
    let replies = [
        calls.ask(0, "me", TTL, None).await,
        calls.ask(1, "me", TTL, None).await,
    ];
    assert_eq!(replies, [Reply::Granted(7), Reply::Nil]);
    let Reply::Failed(unexpected) = calls.ask(2, "me", TTL, None).await else {
        panic!("an unexpected reply is a failure");
    };
    assert_eq!(unexpected.node, "fake://2");
    assert!(
        unexpected.reason.contains("unexpected reply"),
        "{unexpected:?}"
    );
    assert!(matches!(calls.ask(3, "me", TTL, None).await, Reply::Failed(f) if f.reason == "down"));
}

#[tokio::test]
async fn a_commit_is_committed_or_says_why_not() {
    let calls = calls_to(3, |n, _, _| match n {
        0 => Ok(Value::Int(1)),
        1 => Ok(Value::Int(0)),
        _ => Err("down".into()),
    });
    assert_eq!(calls.fence(0, "me", 9, Some(TTL)).await, Ok(()));
    let refused = calls.fence(1, "me", 9, None).await.unwrap_err();
    assert_eq!(refused.reason, "fence refused: lock no longer held");
    assert_eq!(
        calls.fence(2, "me", 9, None).await.unwrap_err().reason,
        "down"
    );
}

#[tokio::test]
async fn extend_needs_the_quorum_within_the_new_validity() {
    let calls = calls_to(5, |n, _, _| match n {
        0 | 1 => Ok(Value::Int(0)),
        _ => Ok(Value::Int(1)),
    });
    assert!(calls.extend("me", TTL).await.is_ok(), "3 of 5");
    let calls = calls_to(5, |n, _, _| match n {
        0..=2 => Ok(Value::Int(0)),
        _ => Ok(Value::Int(1)),
    });
    let tally = calls.extend("me", TTL).await.unwrap_err();
    assert_eq!((tally.done, tally.refused), (2, 3));
    assert!(
        matches!(tally.extend_error("res", 3), Error::LockLost { .. }),
        "a quorum said no"
    );
    let calls = calls_to(5, |n, _, _| match n {
        0..=2 => Err("down".into()),
        _ => Ok(Value::Int(1)),
    });
    let tally = calls.extend("me", TTL).await.unwrap_err();
    assert!(
        matches!(
            tally.extend_error("res", 3),
            Error::NoQuorum { needed: 3, .. }
        ),
        "too few answered to tell"
    );
}

#[tokio::test]
async fn release_counts_answers_yes_or_no() {
    let calls = calls_to(3, |n, _, _| match n {
        0 => Ok(Value::Int(1)),
        1 => Ok(Value::Int(0)),
        _ => Err("down".into()),
    });
    let tally = calls.release("me").await;
    assert_eq!(
        (tally.done, tally.answered(), tally.unreachable.len()),
        (1, 2, 1)
    );
}
