//! The rounds against a scripted transport: every decision, failures included, without a
//! network.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::*;
use crate::options::Options;
use crate::timing::testing::FakeClock;
use crate::transport::fake::FakeTransport;

const TTL: Duration = Duration::from_secs(10);

fn grant(token: i64) -> Result<Value, String> {
    Ok(Value::Int(token))
}

fn setup(
    nodes: usize,
    script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
) -> (FakeTransport, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new());
    (FakeTransport::new(nodes, clock.clone(), script), clock)
}

fn round<'a>(t: &'a FakeTransport, clock: &'a Arc<FakeClock>, opts: &'a RoundOptions) -> Round<'a> {
    Round {
        transport: t,
        clock,
        opts,
        resource: "res",
        owner: "me",
        kind: crate::kind::LockKind::Exclusive,
    }
}

fn opts() -> RoundOptions {
    Options::default().rounds
}

/// Node i grants token 10 + i, commits any FENCE, releases with 1.
fn all_grant(node: usize, r: &Request<'_>, _: usize) -> Result<Value, String> {
    match r {
        Request::Acquire { .. } => grant(10 + node as i64),
        _ => Ok(Value::Int(1)),
    }
}

#[tokio::test]
async fn a_majority_commits_the_largest_token_on_the_granting_nodes() {
    let (t, clock) = setup(5, |n, r, a| match (n, r) {
        (3 | 4, Request::Acquire { .. }) => Ok(Value::Nil),
        _ => all_grant(n, r, a),
    });
    let o = opts();
    let granted = round(&t, &clock, &o).acquire(TTL).await.unwrap();
    assert_eq!(granted.token, 12);
    for node in 0..3 {
        assert_eq!(
            t.sent_to(node),
            ["ACQUIRE 10000", "FENCE 12"],
            "node {node}"
        );
    }
    assert_eq!(
        t.sent_to(3),
        ["ACQUIRE 10000"],
        "no FENCE where nothing was granted"
    );
}

#[tokio::test]
async fn validity_is_the_ttl_less_elapsed_time_and_drift() {
    let (t, clock) = setup(3, all_grant);
    let t = t.with_latency(Duration::from_millis(5));
    let o = opts();
    let start = clock.now();
    let granted = round(&t, &clock, &o).acquire(TTL).await.unwrap();
    // 3 ACQUIREs and 3 FENCEs at 5 ms each on the fake clock; drift 1 % + 2 ms.
    assert_eq!(
        granted.valid_until - start,
        TTL - Duration::from_millis(102)
    );
}

#[tokio::test]
async fn one_node_skips_the_commit() {
    let (t, clock) = setup(1, all_grant);
    let o = opts();
    assert_eq!(round(&t, &clock, &o).acquire(TTL).await.unwrap().token, 10);
    assert_eq!(t.sent_to(0), ["ACQUIRE 10000"]);
}

#[tokio::test]
async fn fencing_off_returns_the_largest_token_without_a_commit() {
    let (t, clock) = setup(3, all_grant);
    let o = RoundOptions {
        fencing: false,
        ..opts()
    };
    assert_eq!(round(&t, &clock, &o).acquire(TTL).await.unwrap().token, 12);
    assert!(t.sent().iter().all(|(_, r)| r.starts_with("ACQUIRE")));
}

#[tokio::test]
async fn a_node_whose_reply_was_lost_is_asked_again() {
    // Node 1 refuses, so the attempt needs node 2, whose first reply is lost.
    let (t, clock) = setup(3, |n, r, attempt| match (n, r, attempt) {
        (1, Request::Acquire { .. }, _) => Ok(Value::Nil),
        (2, Request::Acquire { .. }, 0) => Err("timed out after 50ms".into()),
        _ => all_grant(n, r, attempt),
    });
    let o = opts();
    assert_eq!(round(&t, &clock, &o).acquire(TTL).await.unwrap().token, 12);
    assert_eq!(t.sent_to(2), ["ACQUIRE 10000", "ACQUIRE 10000", "FENCE 12"]);
}

#[tokio::test]
async fn nobody_is_asked_again_when_it_cannot_change_the_outcome() {
    let votes = |v: &[Option<u64>]| -> Vec<Vote> {
        v.iter()
            .map(|x| match x {
                Some(0) => Vote::Refused,
                Some(t) => Vote::Granted(*t),
                None => Vote::Failed(NodeFailure {
                    node: "n".into(),
                    reason: "down".into(),
                }),
            })
            .collect()
    };
    assert_eq!(
        nodes_worth_asking_again(&votes(&[Some(1), Some(2), None]), 2),
        Vec::<usize>::new(),
        "already a majority"
    );
    assert_eq!(
        nodes_worth_asking_again(&votes(&[Some(0), Some(0), None]), 2),
        Vec::<usize>::new(),
        "hopeless"
    );
    assert_eq!(
        nodes_worth_asking_again(&votes(&[Some(1), Some(0), None, None, Some(3)]), 3),
        vec![2, 3]
    );
}

#[tokio::test]
async fn a_minority_of_grants_is_contended_and_everything_is_released() {
    let (t, clock) = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Acquire { .. }) => Ok(Value::Nil),
        _ => all_grant(n, r, a),
    });
    let o = opts();
    assert_eq!(
        round(&t, &clock, &o).acquire(TTL).await.unwrap_err(),
        AttemptError::Contended
    );
    for node in 0..3 {
        assert_eq!(t.sent_to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

#[tokio::test]
async fn too_few_answers_is_no_quorum_naming_each_failed_node() {
    let (t, clock) = setup(5, |n, r, a| match n {
        0 | 2 | 4 => Err(format!("cannot connect to {n}")),
        _ => all_grant(n, r, a),
    });
    let o = opts();
    let AttemptError::NoQuorum(failures) = round(&t, &clock, &o).acquire(TTL).await.unwrap_err()
    else {
        panic!("expected NoQuorum")
    };
    let named: Vec<(&str, &str)> = failures
        .iter()
        .map(|f| (f.node.as_str(), f.reason.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("fake://0", "cannot connect to 0"),
            ("fake://2", "cannot connect to 2"),
            ("fake://4", "cannot connect to 4")
        ]
    );
}

#[tokio::test]
async fn a_commit_refused_by_a_majority_names_every_node_that_kept_it_from_one() {
    let (t, clock) = setup(3, |n, r, a| match (n, r) {
        (0, _) => Err("down".into()),
        (1, Request::Fence { .. }) => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let o = opts();
    let AttemptError::NoQuorum(failures) = round(&t, &clock, &o).acquire(TTL).await.unwrap_err()
    else {
        panic!("expected NoQuorum")
    };
    let reasons: Vec<&str> = failures.iter().map(|f| f.reason.as_str()).collect();
    assert_eq!(reasons, ["down", "fence refused: lock no longer held"]);
}

#[tokio::test]
async fn a_commit_refused_after_validity_ran_out_is_validity_expired() {
    // Slow nodes: the commit round ends past the TTL, and the nodes refuse (expired there).
    let (t, clock) = setup(3, |n, r, a| match r {
        Request::Fence { .. } => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let t = t.with_latency(Duration::from_millis(40));
    let o = opts();
    let error = round(&t, &clock, &o)
        .acquire(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(error, AttemptError::ValidityExpired);
}

#[tokio::test]
async fn no_commit_is_sent_once_phase_one_used_up_the_validity() {
    let (t, clock) = setup(3, all_grant);
    let t = t.with_latency(Duration::from_millis(50));
    let o = opts();
    let error = round(&t, &clock, &o)
        .acquire(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert_eq!(error, AttemptError::ValidityExpired);
    assert!(t.sent().iter().all(|(_, r)| !r.starts_with("FENCE")));
}

#[tokio::test]
async fn extend_needs_a_majority_within_the_new_validity() {
    let (t, clock) = setup(5, |n, r, a| match (n, r) {
        (0 | 1, Request::Extend { .. }) => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let o = opts();
    assert!(round(&t, &clock, &o).extend(TTL).await.is_ok(), "3 of 5");
    let (t, clock) = setup(5, |n, r, a| match (n, r) {
        (0..=2, Request::Extend { .. }) => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let tally = round(&t, &clock, &o).extend(TTL).await.unwrap_err();
    assert_eq!((tally.done, tally.refused), (2, 3));
    assert!(
        matches!(tally.extend_error("res", 3), Error::LockLost { .. }),
        "a majority said no"
    );
    let (t, clock) = setup(5, |n, r, a| match n {
        0..=2 => Err("down".into()),
        _ => all_grant(n, r, a),
    });
    let tally = round(&t, &clock, &o).extend(TTL).await.unwrap_err();
    assert!(
        matches!(
            tally.extend_error("res", 3),
            Error::NoQuorum { needed: 3, .. }
        ),
        "too few answered to tell"
    );
}

#[test]
fn ttl_is_rounded_down_to_what_the_nodes_apply() {
    assert_eq!(
        whole_ms(Duration::from_micros(10_900)),
        Duration::from_millis(10)
    );
    assert_eq!(whole_ms(Duration::from_secs(3)), Duration::from_secs(3));
}
