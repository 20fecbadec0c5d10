//! Attempts that do not wait on the nodes (`try_lock`, retry mode) against a scripted
//! transport: one round, a failed node asked again at once, the commit on every granting node,
//! validity from the first ask, the verdicts.

use super::*;

#[tokio::test(start_paused = true)]
async fn without_a_server_wait_a_quorum_commits_the_largest_token_on_the_granting_nodes() {
    let s = setup(5, |n, r, a| match (n, r) {
        (3 | 4, Request::Acquire { .. }) => Ok(Value::Nil),
        _ => all_grant(n, r, a),
    });
    let won = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.unwrap();
    assert_eq!(won.granted.token, 12);
    for node in 0..3 {
        assert_eq!(s.to(node), ["ACQUIRE 10000", "FENCE 12"], "node {node}");
    }
    assert_eq!(
        s.to(3),
        ["ACQUIRE 10000"],
        "no FENCE where nothing was granted"
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_server_wait_validity_counts_from_the_first_ask() {
    let slow = Nodes {
        latency: Duration::from_millis(5),
        ..Nodes::default()
    };
    let s = slow.script(3, all_grant);
    let start = s.clock.now();
    let won = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.unwrap();
    // Drift: 1 % of the TTL + 2 ms; the asks and the commit took their time on the fake clock.
    assert_eq!(
        won.granted.valid_until - start,
        TTL - Duration::from_millis(102)
    );
}

#[tokio::test(start_paused = true)]
async fn fencing_off_returns_the_largest_token_without_a_commit() {
    let s = setup(3, all_grant);
    let acquire = s.acquire(Policy::NoWait { commit: false }, Duration::ZERO);
    assert_eq!(acquire.run(true).await.unwrap().granted.token, 12);
    assert!(s.sent.sent().iter().all(|(_, r)| r.starts_with("ACQUIRE")));
}

#[tokio::test(start_paused = true)]
async fn without_a_server_wait_a_node_whose_reply_was_lost_is_asked_again() {
    // Node 1 refuses, so the attempt needs node 2, whose first reply is lost.
    let s = setup(3, |n, r, attempt| match (n, r, attempt) {
        (1, Request::Acquire { .. }, _) => Ok(Value::Nil),
        (2, Request::Acquire { .. }, 0) => Err("timed out after 50ms".into()),
        _ => all_grant(n, r, attempt),
    });
    let won = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.unwrap();
    assert_eq!(won.granted.token, 12);
    assert_eq!(s.to(2), ["ACQUIRE 10000", "ACQUIRE 10000", "FENCE 12"]);
}

#[tokio::test(start_paused = true)]
async fn a_minority_of_grants_is_contended_and_everything_is_released() {
    let s = setup(3, |n, r, a| match (n, r) {
        (1 | 2, Request::Acquire { .. }) => Ok(Value::Nil),
        _ => all_grant(n, r, a),
    });
    let failure = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.err();
    assert_eq!(failure, Some((AttemptError::Contended, 1)));
    for node in 0..3 {
        assert_eq!(s.to(node).last().unwrap(), "RELEASE", "node {node}");
    }
}

#[tokio::test(start_paused = true)]
async fn too_few_answers_is_no_quorum_naming_each_failed_node() {
    let s = setup(5, |n, r, a| match n {
        0 | 2 | 4 => Err(format!("cannot connect to {n}")),
        _ => all_grant(n, r, a),
    });
    let failure = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.err();
    let Some((AttemptError::NoQuorum(failures), _)) = failure else {
        panic!("expected NoQuorum: {failure:?}")
    };
    let named: Vec<(&str, &str)> = failures
        .iter()
        .map(|f| (f.node.as_str(), f.reason.as_str()))
        .collect();
    let expected = [
        ("fake://0", "cannot connect to 0"),
        ("fake://2", "cannot connect to 2"),
        ("fake://4", "cannot connect to 4"),
    ];
    assert_eq!(named, expected);
}

#[tokio::test(start_paused = true)]
async fn a_commit_refused_by_a_quorum_names_every_node_that_kept_it_from_one() {
    let s = setup(3, |n, r, a| match (n, r) {
        (0, _) => Err("down".into()),
        (1, Request::Fence { .. }) => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let failure = s.acquire(NO_WAIT, Duration::ZERO).run(true).await.err();
    let Some((AttemptError::NoQuorum(failures), _)) = failure else {
        panic!("expected NoQuorum: {failure:?}")
    };
    let reasons: Vec<&str> = failures.iter().map(|f| f.reason.as_str()).collect();
    assert_eq!(reasons, ["down", "fence refused: lock no longer held"]);
}

#[tokio::test(start_paused = true)]
async fn a_commit_refused_after_validity_ran_out_is_validity_expired() {
    // Slow nodes: the commit's first answer comes past the TTL, a refusal (expired there).
    let slow = Nodes {
        latency: Duration::from_millis(50),
        ..Nodes::default()
    };
    let s = slow.script(3, |n, r, a| match r {
        Request::Fence { .. } => Ok(Value::Int(0)),
        _ => all_grant(n, r, a),
    });
    let acquire = s.acquire_for(Duration::from_millis(200), NO_WAIT, Duration::ZERO);
    let failure = acquire.run(true).await.err();
    assert_eq!(failure, Some((AttemptError::ValidityExpired, 1)));
}
