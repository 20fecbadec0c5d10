//! Attempts against a scripted transport. Queue mode: tickets, commits with a fresh TTL, wounds
//! and new rounds, the deadline, nodes coming back, validity from the commit, late grants. No
//! server wait (`try_lock`, retry mode): one round, a failed node asked again at once, the
//! verdicts. And how a wait's end is told from a node's failure.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::*;
use crate::backend::Backend;
use crate::commands::Request;
use crate::kind::LockKind;
use crate::options::Options;
use crate::timing::testing::{FakeClock, TokioClock};
use crate::timing::Clock;
use crate::transport::fake::{FakeTransport, LATE, NEVER, NO_REPLY};

const TTL: Duration = Duration::from_secs(10);
const QUEUE: Policy = Policy::Queue;
const NO_WAIT: Policy = Policy::NoWait { commit: true };

type Script = dyn Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync;

/// How the scripted nodes of a test behave, and the clock the manager reads.
struct Nodes {
    /// How far each call moves the fake clock.
    latency: Duration,
    clock: Arc<FakeClock>,
    /// Read Tokio's (paused) time instead, which moves as timers fire.
    tokio_time: bool,
}

impl Default for Nodes {
    fn default() -> Self {
        Nodes {
            latency: Duration::from_millis(1),
            clock: Arc::new(FakeClock::new()),
            tokio_time: false,
        }
    }
}

impl Nodes {
    fn script(
        self,
        nodes: usize,
        script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Setup {
        let boxed: Box<Script> = Box::new(script);
        let sent = FakeTransport::new(nodes, self.clock.clone(), boxed).with_latency(self.latency);
        let sent = Arc::new(sent);
        let clock: Box<dyn Clock> = if self.tokio_time {
            Box::new(TokioClock)
        } else {
            Box::new(self.clock.clone())
        };
        let backend = Backend::new(Box::new(sent.clone()), Options::default(), clock);
        Setup {
            backend: Arc::new(backend),
            sent,
            clock: self.clock,
        }
    }
}

/// Scripted nodes, and what they were sent.
struct Setup {
    backend: Arc<Backend>,
    sent: Arc<FakeTransport>,
    clock: Arc<FakeClock>,
}

fn setup(
    nodes: usize,
    script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
) -> Setup {
    Nodes::default().script(nodes, script)
}

fn on_tokio_time() -> Nodes {
    Nodes {
        tokio_time: true,
        ..Nodes::default()
    }
}

impl Setup {
    fn acquire(&self, policy: Policy, wait: Duration) -> Arc<Acquire> {
        self.acquire_for(TTL, policy, wait)
    }

    fn acquire_for(&self, ttl: Duration, policy: Policy, wait: Duration) -> Arc<Acquire> {
        let calls = Calls::new(self.backend.clone(), "res", LockKind::Exclusive);
        let deadline = self.backend.clock.now() + wait;
        Acquire::new(calls, (ttl, deadline), policy, None)
    }

    /// What node `node` was sent.
    fn to(&self, node: usize) -> Vec<String> {
        self.sent.sent_to(node)
    }

    fn count(&self, node: usize, prefix: &str) -> usize {
        self.to(node)
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

/// Node i grants 10 + i to any ask, commits any FENCE, answers 1 otherwise.
fn all_grant(node: usize, r: &Request<'_>, _: usize) -> Result<Value, String> {
    match r {
        Request::Wait { .. } | Request::Acquire { .. } => Ok(Value::Int(10 + node as i64)),
        _ => Ok(Value::Int(1)),
    }
}

/// The lock, which the test expects to be won.
async fn won(acquire: &Arc<Acquire>) -> Acquired {
    match acquire.run(false).await {
        Ok(won) => won,
        Err(failure) => panic!("not acquired: {failure:?}"),
    }
}

async fn failed(acquire: &Arc<Acquire>) -> (AttemptError, u32) {
    match acquire.run(false).await {
        Ok(won) => panic!("acquired {}", won.granted.token),
        Err(failure) => failure,
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
    let s = setup(3, all_grant);
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    // Nodes 0 and 1 answer first: a quorum, committed with the larger of their tokens.
    assert_eq!(won.granted.token, 11);
    assert!(won.owner.ends_with(":0"), "{}", won.owner);
    let first = s.to(0)[0].clone();
    assert!(first.starts_with("WAIT round 0 ticket "), "{first}");
    for node in 0..3 {
        assert_eq!(s.to(node)[0], first, "one ticket on every node");
    }
    assert_eq!(s.to(0)[1..], ["FENCE 11 PX 10000"]);
    assert_eq!(s.to(1)[1..], ["FENCE 11 PX 10000"]);
}

#[tokio::test(start_paused = true)]
async fn one_node_waits_without_a_ticket_and_does_not_commit() {
    let s = setup(1, all_grant);
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 10);
    assert_eq!(s.to(0), vec!["WAIT round 0"]);
}

#[tokio::test(start_paused = true)]
async fn one_node_granted_after_a_long_wait_renews_the_ttl_before_counting_validity() {
    let nodes = Nodes::default();
    let served_late = nodes.clock.clone();
    let s = nodes.script(1, move |n, r, a| {
        if matches!(r, Request::Wait { .. }) {
            served_late.advance(Duration::from_secs(8));
        }
        all_grant(n, r, a)
    });
    let won = won(&s.acquire(QUEUE, Duration::from_secs(60))).await;
    assert_eq!(s.to(0), vec!["WAIT round 0", "EXTEND 10000"]);
    let left = won.granted.valid_until - s.clock.now();
    assert!(
        left > Duration::from_secs(9),
        "validity counts from the renewal: {left:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wounded_round_releases_and_waits_again_with_the_same_ticket_as_a_new_owner() {
    // Node 1 refuses the first commit (a smaller ticket took its tentative grant).
    let s = setup(3, |n, r, a| match (n, r) {
        (1, Request::Fence { .. }) if a == 0 => Ok(Value::Int(0)),
        (2, Request::Wait { .. }) if a == 0 => Err(NEVER.into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    settle().await;
    assert!(won.owner.ends_with(":1"), "{}", won.owner);
    let sent = s.to(0);
    let ticket = |line: &str| line.rsplit(' ').next().unwrap().to_string();
    assert_eq!(&sent[1], "FENCE 11 PX 10000");
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
    let s = setup(3, |_, r, _| match r {
        Request::Wait { timeout_ms, .. } => {
            assert!((250..=300).contains(timeout_ms), "WAIT {timeout_ms}");
            Ok(Value::Nil) // the node's own timeout: held by others all along
        }
        _ => Ok(Value::Int(1)),
    });
    let failure = failed(&s.acquire(QUEUE, Duration::from_millis(300))).await;
    assert_eq!(failure, (AttemptError::Contended, 1));
}

#[tokio::test(start_paused = true)]
async fn waits_nobody_serves_end_at_the_deadline_and_are_withdrawn() {
    let s = setup(3, |_, r, _| match r {
        Request::Wait { .. } => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    let started = tokio::time::Instant::now();
    let failure = failed(&s.acquire(QUEUE, Duration::from_millis(300))).await;
    assert_eq!(failure, (AttemptError::Contended, 1));
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    settle().await;
    for node in 0..3 {
        assert_eq!(s.to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

/// The bug of issue 36: a queued wait that the server answers after the client's own time for
/// the call ran out (it notices a wait's timeout only at its next tick) is the wait's end, not a
/// node failure: contended, for every wait from 0 up, on one node and on five.
#[tokio::test(start_paused = true)]
async fn a_wait_unanswered_past_the_deadline_is_contention_not_a_node_failure() {
    for nodes in [1, 5] {
        for wait_ms in [0, 50, 100] {
            let s = on_tokio_time().script(nodes, |_, r, _| match r {
                Request::Wait { .. } => Err(NO_REPLY.into()),
                _ => Ok(Value::Int(1)),
            });
            let failure = failed(&s.acquire(QUEUE, Duration::from_millis(wait_ms))).await;
            assert_eq!(
                failure.0,
                AttemptError::Contended,
                "{nodes} nodes, wait {wait_ms} ms"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_node_that_cannot_be_reached_is_no_quorum_even_with_a_zero_wait() {
    let s = on_tokio_time().script(1, |_, _, _| Err("cannot connect: refused".into()));
    let (failure, _) = failed(&s.acquire(QUEUE, Duration::ZERO)).await;
    assert!(
        matches!(failure, AttemptError::NoQuorum(ref f) if f.len() == 1),
        "{failure:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn no_reply_to_a_plain_acquire_is_a_node_failure() {
    let s = on_tokio_time().script(1, |_, _, _| Err(NO_REPLY.into()));
    let (failure, _) = failed(&s.acquire(NO_WAIT, Duration::ZERO)).await;
    assert!(matches!(failure, AttemptError::NoQuorum(_)), "{failure:?}");
    assert_eq!(s.count(0, "ACQUIRE"), 2, "asked again once");
}

#[tokio::test(start_paused = true)]
async fn a_majority_down_is_retried_until_the_nodes_come_back() {
    // Nodes 1 and 2 refuse connections for their first two waits.
    let s = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Wait { .. }) if a < 2 => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 11);
    assert_eq!(s.count(1, "WAIT"), 3);
}

#[tokio::test(start_paused = true)]
async fn a_majority_down_until_the_deadline_names_the_failing_nodes() {
    let s = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Wait { .. }) => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let (failure, attempts) = failed(&s.acquire(QUEUE, Duration::from_millis(200))).await;
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
    let nodes = Nodes::default();
    let slow = nodes.clock.clone();
    let s = nodes.script(3, move |n, r, a| {
        if matches!(r, Request::Fence { .. }) && a == 0 && n == 0 {
            slow.advance(TTL);
        }
        all_grant(n, r, a)
    });
    let won = won(&s.acquire(QUEUE, Duration::from_secs(60))).await;
    settle().await;
    assert!(won.granted.valid_until > s.clock.now());
    assert_eq!(s.count(0, "FENCE"), 2, "{:?}", s.to(0));
    assert!(s.to(0).contains(&"RELEASE".to_string()));
}

#[tokio::test(start_paused = true)]
async fn dropping_lock_midway_withdraws_the_round_everywhere() {
    let s = setup(3, |n, r, a| match (n, r) {
        (0, Request::Wait { .. }) => all_grant(n, r, a), // an uncommitted grant on node 0
        (_, Request::Wait { .. }) => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    let acquire = s.acquire(QUEUE, Duration::from_secs(60));
    let gave_up = tokio::time::timeout(Duration::from_millis(100), acquire.run(false)).await;
    assert!(gave_up.is_err());
    settle().await;
    for node in 0..3 {
        assert_eq!(s.to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_zero_wait_still_asks_once() {
    let s = setup(3, all_grant);
    let won = won(&s.acquire(QUEUE, Duration::ZERO)).await;
    assert_eq!(won.granted.token, 11);
    assert!(s.to(0)[0].starts_with("WAIT"));
}

#[tokio::test(start_paused = true)]
async fn a_node_that_comes_back_is_asked_again_within_the_round() {
    // Node 0 is held by someone else throughout; node 1 refuses two connections, then is back.
    // Without asking node 1 again the round could only end at the deadline.
    let s = setup(3, |n, r, a| match (n, r) {
        (0, Request::Wait { .. }) => Err(NEVER.into()),
        (1, Request::Wait { .. }) if a < 2 => Err("connection refused".into()),
        _ => all_grant(n, r, a),
    });
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    assert_eq!(won.granted.token, 12);
    assert!(won.owner.ends_with(":0"), "the same round: {}", won.owner);
    assert_eq!(s.count(1, "WAIT round 0"), 3);
}

#[tokio::test(start_paused = true)]
async fn a_wait_granted_after_its_round_was_withdrawn_is_released_again() {
    let s = setup(3, |n, r, _| match (n, r) {
        (0, Request::Wait { .. }) => Err(LATE.into()),
        (_, Request::Wait { .. }) => Err(NEVER.into()),
        _ => Ok(Value::Int(1)),
    });
    failed(&s.acquire(QUEUE, Duration::from_millis(200))).await;
    settle().await;
    assert_eq!(s.count(0, "RELEASE"), 1, "the withdrawal");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        s.count(0, "RELEASE"),
        2,
        "and the late grant: {:?}",
        s.to(0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_background_wait_granted_after_the_holder_released_is_released_again() {
    let s = setup(3, late_on_node_0);
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    won.released.cancel(); // what LockGuard::release does before its RELEASE goes out
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(s.count(0, "RELEASE"), 1, "{:?}", s.to(0));
}

#[tokio::test(start_paused = true)]
async fn a_background_wait_granted_while_the_lock_is_held_is_the_holders() {
    let s = setup(3, late_on_node_0);
    let won = won(&s.acquire(QUEUE, Duration::from_secs(5))).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(s.count(0, "RELEASE"), 0, "{:?}", s.to(0));
    drop(won);
}

/// Attempts that do not wait on the nodes (`try_lock`, retry mode).
#[path = "driver_no_wait_tests.rs"]
mod no_wait;
