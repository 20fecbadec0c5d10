//! Queue mode against a scripted transport: tickets, commits with a fresh TTL, wounds and
//! re-waits, the deadline, nodes coming back, and validity counted from the commit.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::*;
use crate::options::Options;
use crate::timing::testing::FakeClock;
use crate::timing::Clock;
use crate::transport::fake::{FakeTransport, LATE, NEVER};

const TTL: Duration = Duration::from_secs(10);

type Script = dyn Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync;

fn setup(
    nodes: usize,
    script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
) -> (Arc<Shared>, Arc<FakeTransport>, Arc<FakeClock>) {
    setup_on(Arc::new(FakeClock::new()), nodes, script)
}

fn setup_on(
    clock: Arc<FakeClock>,
    nodes: usize,
    script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
) -> (Arc<Shared>, Arc<FakeTransport>, Arc<FakeClock>) {
    let boxed: Box<Script> = Box::new(script);
    let transport = Arc::new(FakeTransport::new(nodes, clock.clone(), boxed));
    let shared = Arc::new(Shared::new(
        Box::new(transport.clone()),
        Options::default(),
        Box::new(clock.clone()),
    ));
    (shared, transport, clock)
}

fn wait(shared: &Arc<Shared>, clock: &FakeClock, wait: Duration) -> Arc<QueueWait> {
    Arc::new(QueueWait::new(
        shared.clone(),
        "res".into(),
        TTL,
        clock.now() + wait,
    ))
}

/// Node i grants 10 + i to any wait, commits any FENCE, answers 1 otherwise.
fn all_grant(node: usize, r: &Request<'_>, _: usize) -> Result<Value, String> {
    match r {
        Request::Wait { .. } => Ok(Value::Int(10 + node as i64)),
        _ => Ok(Value::Int(1)),
    }
}

/// The lock, which the test expects to be won.
async fn won(queued: &Arc<QueueWait>) -> Acquired {
    match queued.acquire().await {
        Ok(won) => won,
        Err(failure) => panic!("not acquired: {failure:?}"),
    }
}

/// Node 0 serves its waits only after the attempt is over; the others grant at once.
fn late_on_node_0(node: usize, r: &Request<'_>, attempt: usize) -> Result<Value, String> {
    match (node, r) {
        (0, Request::Wait { .. }) => Err(LATE.into()),
        _ => all_grant(node, r, attempt),
    }
}

/// Lets the background releases run.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn waits_everywhere_with_one_ticket_then_commits_the_largest_token_with_a_fresh_ttl() {
    let fenced_ttls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = fenced_ttls.clone();
    let (shared, t, clock) = setup(3, move |n, r, a| {
        if let Request::Fence { ttl_ms, .. } = r {
            log.lock().unwrap().push(*ttl_ms);
        }
        all_grant(n, r, a)
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    // Nodes 0 and 1 answer first: a majority, committed with the larger of their tokens.
    assert_eq!(won.granted.token, 11);
    assert!(won.owner.ends_with(":0"), "{}", won.owner);
    let first = t.sent_to(0)[0].clone();
    assert!(first.starts_with("WAIT round 0 ticket "), "{first}");
    for node in 0..3 {
        assert_eq!(t.sent_to(node)[0], first, "one ticket on every node");
    }
    assert_eq!(t.sent_to(0)[1..], ["FENCE 11"]);
    assert_eq!(t.sent_to(1)[1..], ["FENCE 11"]);
    assert_eq!(*fenced_ttls.lock().unwrap(), vec![Some(10_000); 2]);
}

#[tokio::test(start_paused = true)]
async fn one_node_waits_without_a_ticket_and_does_not_commit() {
    let (shared, t, clock) = setup(1, all_grant);
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 10);
    assert_eq!(t.sent_to(0), vec!["WAIT round 0"]);
}

#[tokio::test(start_paused = true)]
async fn one_node_granted_after_a_long_wait_renews_the_ttl_before_counting_validity() {
    let clock = Arc::new(FakeClock::new());
    let served_late = clock.clone();
    let (shared, t, _) = setup_on(clock.clone(), 1, move |n, r, a| {
        if matches!(r, Request::Wait { .. }) {
            served_late.advance(Duration::from_secs(8));
        }
        all_grant(n, r, a)
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(60))).await;
    assert_eq!(t.sent_to(0), vec!["WAIT round 0", "EXTEND 10000"]);
    let left = won.granted.valid_until - clock.now();
    assert!(
        left > Duration::from_secs(9),
        "validity counts from the renewal: {left:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wounded_round_releases_and_waits_again_with_the_same_ticket_as_a_new_owner() {
    // Node 1 refuses the first commit (a smaller ticket took its tentative grant).
    let (shared, t, clock) = setup(3, |n, r, a| match (n, r) {
        (1, Request::Fence { .. }) if a == 0 => Ok(Value::Int(0)),
        (2, Request::Wait { .. }) if a == 0 => Err(NEVER.into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    settle().await;
    assert!(won.owner.ends_with(":1"), "{}", won.owner);
    let sent = t.sent_to(0);
    let ticket = |line: &str| line.rsplit(' ').next().unwrap().to_string();
    assert_eq!(&sent[1], "FENCE 11");
    assert!(sent[2..].contains(&"RELEASE".to_string()), "{sent:?}");
    let second_wait = sent.iter().find(|l| l.starts_with("WAIT round 1")).unwrap();
    assert_eq!(
        ticket(second_wait),
        ticket(&sent[0]),
        "the ticket keeps its place"
    );
}

#[tokio::test(start_paused = true)]
async fn waits_end_on_the_nodes_at_the_deadline_and_that_is_contention() {
    let (shared, t, clock) = setup(3, |_, r, _| match r {
        Request::Wait { timeout_ms, .. } => {
            assert!((250..=300).contains(timeout_ms), "WAIT {timeout_ms}");
            Ok(Value::Nil) // the node's own timeout: held by others all along
        }
        _ => Ok(Value::Int(1)),
    });
    let failed = wait(&shared, &clock, Duration::from_millis(300))
        .acquire()
        .await
        .err()
        .unwrap();
    assert_eq!(failed, (AttemptError::Contended, 1));
    assert_eq!(t.sent_to(0)[0].split(' ').next(), Some("WAIT"));
}

#[tokio::test(start_paused = true)]
async fn waits_nobody_serves_end_at_the_deadline() {
    let (shared, t, clock) = setup(3, |_, r, _| match r {
        Request::Wait { .. } => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    let started = tokio::time::Instant::now();
    let failed = wait(&shared, &clock, Duration::from_millis(300))
        .acquire()
        .await
        .err()
        .unwrap();
    assert_eq!(failed, (AttemptError::Contended, 1));
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    settle().await;
    for node in 0..3 {
        assert_eq!(t.sent_to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_majority_down_is_retried_until_the_nodes_come_back() {
    // Nodes 1 and 2 refuse connections for their first two waits.
    let (shared, t, clock) = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Wait { .. }) if a < 2 => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 11);
    let waits = t
        .sent_to(1)
        .iter()
        .filter(|l| l.starts_with("WAIT"))
        .count();
    assert_eq!(waits, 3);
}

#[tokio::test(start_paused = true)]
async fn a_majority_down_until_the_deadline_names_the_failing_nodes() {
    let (shared, _, clock) = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Wait { .. }) => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let (failure, attempts) = wait(&shared, &clock, Duration::from_millis(200))
        .acquire()
        .await
        .err()
        .unwrap();
    let AttemptError::NoQuorum(failures) = failure else {
        panic!("{failure:?}");
    };
    assert_eq!(failures.len(), 2);
    assert!(failures.iter().all(|f| f.reason == "connection refused"));
    assert!(attempts > 1);
}

#[tokio::test(start_paused = true)]
async fn a_commit_that_outlives_the_validity_is_given_up_and_retried() {
    // The first commit round takes longer than the TTL (a GC pause, a partition): the lock was
    // committed but may already have expired; it must not be reported as held.
    let clock = Arc::new(FakeClock::new());
    let slow = clock.clone();
    let (shared, t, _) = setup_on(clock.clone(), 3, move |n, r, a| {
        if matches!(r, Request::Fence { .. }) && a == 0 && n == 0 {
            slow.advance(TTL);
        }
        all_grant(n, r, a)
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(60))).await;
    settle().await;
    assert!(won.granted.valid_until > clock.now());
    let fences = t
        .sent_to(0)
        .iter()
        .filter(|l| l.starts_with("FENCE"))
        .count();
    assert_eq!(fences, 2, "{:?}", t.sent_to(0));
    assert!(t.sent_to(0).contains(&"RELEASE".to_string()));
}

#[test]
fn tickets_increase_strictly_even_within_one_microsecond() {
    let tickets: Vec<u64> = (0..1000).map(|_| draw_ticket()).collect();
    assert!(tickets.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test(start_paused = true)]
async fn dropping_lock_midway_withdraws_the_round_everywhere() {
    let (shared, t, clock) = setup(3, |n, r, a| match (n, r) {
        (0, Request::Wait { .. }) => all_grant(n, r, a), // an uncommitted grant on node 0
        (_, Request::Wait { .. }) => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    let queued = wait(&shared, &clock, Duration::from_secs(60));
    let gave_up = tokio::time::timeout(Duration::from_millis(100), queued.acquire()).await;
    assert!(gave_up.is_err());
    settle().await;
    for node in 0..3 {
        assert_eq!(t.sent_to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_zero_wait_still_asks_once() {
    let (shared, t, clock) = setup(3, all_grant);
    let won = won(&wait(&shared, &clock, Duration::ZERO)).await;
    assert_eq!(won.granted.token, 11);
    assert!(t.sent_to(0)[0].starts_with("WAIT"));
}

#[tokio::test(start_paused = true)]
async fn a_node_that_comes_back_is_asked_again_within_the_round() {
    // Node 0 is held by someone else throughout; node 1 refuses two connections, then is back.
    // Without asking node 1 again the round could only end at the deadline.
    let (shared, t, clock) = setup(3, |n, r, a| match (n, r) {
        (0, Request::Wait { .. }) => Err(NEVER.into()),
        (1, Request::Wait { .. }) if a < 2 => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 12);
    assert!(won.owner.ends_with(":0"), "the same round: {}", won.owner);
    let waits = t
        .sent_to(1)
        .iter()
        .filter(|l| l.starts_with("WAIT round 0"))
        .count();
    assert_eq!(waits, 3);
}

fn releases(t: &FakeTransport, node: usize) -> usize {
    t.sent_to(node).iter().filter(|l| *l == "RELEASE").count()
}

#[tokio::test(start_paused = true)]
async fn a_wait_granted_after_its_round_was_withdrawn_is_released_again() {
    let (shared, t, clock) = setup(3, |n, r, _| match (n, r) {
        (0, Request::Wait { .. }) => Err(LATE.into()),
        (_, Request::Wait { .. }) => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    let failed = wait(&shared, &clock, Duration::from_millis(200))
        .acquire()
        .await;
    assert!(failed.is_err());
    settle().await;
    assert_eq!(releases(&t, 0), 1, "the withdrawal");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        releases(&t, 0),
        2,
        "and the late grant, released: {:?}",
        t.sent_to(0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_background_wait_granted_after_the_holder_released_is_released_again() {
    let (shared, t, clock) = setup(3, late_on_node_0);
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    won.released.cancel(); // what LockGuard::release does before its RELEASE goes out
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(releases(&t, 0), 1, "{:?}", t.sent_to(0));
}

#[tokio::test(start_paused = true)]
async fn a_background_wait_granted_while_the_lock_is_held_is_the_holders() {
    let (shared, t, clock) = setup(3, late_on_node_0);
    let won = won(&wait(&shared, &clock, Duration::from_secs(5))).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(releases(&t, 0), 0, "{:?}", t.sent_to(0));
    drop(won);
}
