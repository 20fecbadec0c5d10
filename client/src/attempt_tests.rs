//! The attempt's decisions one by one (conformance/attempts.json runs whole scripts of them).

use super::*;

fn failure(no_reply: bool) -> NodeFailure {
    let failure = NodeFailure::new("n", "down");
    NodeFailure {
        no_reply,
        ..failure
    }
}

fn ask(round: u32, nodes: &[usize]) -> Action {
    Action::Ask {
        round,
        nodes: nodes.to_vec(),
    }
}

#[test]
fn only_a_queued_wait_past_the_deadline_counts_a_missing_reply_as_busy() {
    let no_reply = Reply::Failed(failure(true));
    assert_eq!(
        classify(no_reply.clone(), Policy::Queue, true),
        Outcome::Busy
    );
    let early = classify(no_reply.clone(), Policy::Queue, false);
    assert!(
        matches!(early, Outcome::Failed(_)),
        "before the deadline: {early:?}"
    );
    let plain = classify(no_reply, Policy::NoWait { commit: true }, true);
    assert!(
        matches!(plain, Outcome::Failed(_)),
        "no server wait: {plain:?}"
    );
    let refused = classify(Reply::Failed(failure(false)), Policy::Queue, true);
    assert!(
        matches!(refused, Outcome::Failed(_)),
        "unreachable: {refused:?}"
    );
    let wrong = Reply::Failed(NodeFailure::new("n", "WRONGKIND held as a semaphore"));
    assert!(matches!(
        classify(wrong, Policy::Queue, true),
        Outcome::WrongKind(_)
    ));
    assert_eq!(classify(Reply::Nil, Policy::Queue, false), Outcome::Busy);
}

#[test]
fn a_plain_ask_that_fails_is_repeated_once_before_it_counts() {
    let (mut a, start) = Attempt::start(3, 2, Policy::NoWait { commit: true });
    assert_eq!(start, [ask(0, &[0, 1, 2])]);
    let again = Action::AskAgain {
        node: 0,
        round: 0,
        after_pause: false,
    };
    assert_eq!(
        a.on_reply(0, 0, Reply::Failed(failure(false)), false),
        [again]
    );
    assert!(a.on_reply(1, 0, Reply::Nil, false).is_empty());
    let fails = a.on_reply(0, 0, Reply::Failed(failure(false)), false);
    let release = Action::Release {
        round: 0,
        nodes: vec![0, 1, 2],
    };
    // One failed node and one held by others: a quorum was possible, so contended.
    assert_eq!(fails, [release, Action::Failed(AttemptError::Contended)]);
}

#[test]
fn a_queued_wait_that_fails_is_asked_again_after_the_pause_while_its_round_lasts() {
    let (mut a, _) = Attempt::start(3, 2, Policy::Queue);
    let later = Action::AskAgain {
        node: 2,
        round: 0,
        after_pause: true,
    };
    assert_eq!(
        a.on_reply(2, 0, Reply::Failed(failure(false)), false),
        [later]
    );
    let now = Action::AskAgain {
        node: 2,
        round: 0,
        after_pause: false,
    };
    assert_eq!(a.on_pause_over(2, 0), [now]);
    assert!(a.on_pause_over(2, 1).is_empty(), "another round");
    a.on_deadline();
    assert!(a.on_pause_over(2, 0).is_empty(), "the attempt is over");
}

#[test]
fn late_grants_are_the_holders_until_it_releases() {
    let (mut a, _) = Attempt::start(3, 2, Policy::Queue);
    a.on_reply(0, 0, Reply::Granted(5), false);
    a.on_reply(1, 0, Reply::Granted(6), false);
    a.on_fenced(0, 0, Ok(()), true);
    let held = a.on_fenced(1, 0, Ok(()), true);
    assert_eq!(held, [Action::Held { round: 0, token: 6 }]);
    assert!(
        a.on_late(2, 0, Reply::Granted(7), false).is_empty(),
        "the holder's"
    );
    let release = Action::Release {
        round: 0,
        nodes: vec![2],
    };
    assert_eq!(a.on_late(2, 0, Reply::Granted(7), true), [release]);
    assert!(a.on_late(2, 0, Reply::Nil, true).is_empty());
}

#[test]
fn one_node_renews_a_lease_with_less_than_half_its_ttl_left() {
    let s = Duration::from_secs;
    assert_eq!(lease(1, Some(s(6)), s(10), false), Lease::Held(s(6)));
    assert_eq!(lease(1, Some(s(4)), s(10), false), Lease::Renew);
    assert_eq!(lease(1, None, s(10), false), Lease::Renew);
    assert_eq!(lease(1, Some(s(4)), s(10), true), Lease::Held(s(4)));
    assert_eq!(lease(1, None, s(10), true), Lease::Expired);
    assert_eq!(lease(3, Some(s(1)), s(10), false), Lease::Held(s(1)));
    assert_eq!(lease(3, None, s(10), false), Lease::Expired);
}
