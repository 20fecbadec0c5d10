use super::*;

fn granted(node: usize, round: u32, token: u64) -> Event {
    Event::Granted { node, round, token }
}

fn fenced(node: usize, round: u32, committed: bool) -> Event {
    Event::Fenced {
        node,
        round,
        committed,
    }
}

#[test]
fn a_majority_of_grants_commits_the_largest_token_on_them() {
    let (mut a, steps) = Acquisition::start(3);
    assert_eq!(
        steps,
        [Step::Wait {
            round: 0,
            nodes: vec![0, 1, 2]
        }]
    );
    assert!(a.on(granted(2, 0, 11)).is_empty());
    assert_eq!(
        a.on(granted(0, 0, 6)),
        [Step::Fence {
            round: 0,
            token: 11,
            nodes: vec![0, 2]
        }]
    );
    assert!(a.on(fenced(0, 0, true)).is_empty());
    assert_eq!(a.on(fenced(2, 0, true)), [Step::Held { token: 11 }]);
    assert_eq!(a.held(), Some(11));
}

#[test]
fn a_wounded_grant_fails_the_commit_and_the_next_round_waits_again() {
    let (mut a, _) = Acquisition::start(3);
    a.on(granted(0, 0, 5));
    a.on(granted(1, 0, 7));
    assert!(
        a.on(fenced(0, 0, true)).is_empty(),
        "one more commit could still make it"
    );
    assert_eq!(
        a.on(fenced(1, 0, false)),
        [
            Step::Release {
                round: 0,
                nodes: vec![0, 1, 2]
            },
            Step::Wait {
                round: 1,
                nodes: vec![0, 1, 2]
            }
        ]
    );
    assert_eq!(a.round(), 1);
    assert!(
        a.on(fenced(0, 0, true)).is_empty(),
        "stale replies of round 0 are ignored"
    );
    assert_eq!(
        a.on(granted(2, 0, 9)),
        [Step::Release {
            round: 0,
            nodes: vec![2]
        }],
        "but a stale grant is released at once"
    );
    a.on(granted(1, 1, 12));
    assert_eq!(
        a.on(granted(2, 1, 10)),
        [Step::Fence {
            round: 1,
            token: 12,
            nodes: vec![1, 2]
        }]
    );
}

#[test]
fn duplicate_fence_replies_count_once() {
    let (mut a, _) = Acquisition::start(5);
    for n in 0..3 {
        a.on(granted(n, 0, 1));
    }
    a.on(fenced(0, 0, true));
    a.on(fenced(0, 0, true));
    assert_eq!(a.held(), None);
}

#[test]
fn one_node_holds_at_its_grant() {
    let (mut a, _) = Acquisition::start(1);
    assert_eq!(a.on(granted(0, 0, 4)), [Step::Held { token: 4 }]);
}

#[test]
fn too_many_unavailable_nodes_fail_the_acquisition() {
    let (mut a, _) = Acquisition::start(3);
    a.on(granted(0, 0, 4));
    assert!(a.on(Event::Unavailable { node: 1, round: 0 }).is_empty());
    assert_eq!(
        a.on(Event::Unavailable { node: 2, round: 0 }),
        [
            Step::Release {
                round: 0,
                nodes: vec![0, 1, 2]
            },
            Step::Failed
        ]
    );
    assert!(a.is_over());
}

#[test]
fn one_round_only_commits_every_grant_once_all_answered() {
    let (mut a, _) = Acquisition::start_once(3, 2, true);
    assert!(a.on(granted(0, 0, 4)).is_empty());
    assert!(a.on(granted(2, 0, 9)).is_empty(), "node 1 has not answered");
    let fence = Step::Fence {
        round: 0,
        token: 9,
        nodes: vec![0, 2],
    };
    assert_eq!(a.on(Event::Unavailable { node: 1, round: 0 }), [fence]);
}

#[test]
fn one_round_only_fails_when_its_commit_misses() {
    let (mut a, _) = Acquisition::start_once(2, 2, true);
    a.on(granted(0, 0, 4));
    a.on(granted(1, 0, 5));
    assert!(a.on(fenced(0, 0, true)).is_empty());
    let release = Step::Release {
        round: 0,
        nodes: vec![0, 1],
    };
    assert_eq!(a.on(fenced(1, 0, false)), [release, Step::Failed]);
    assert_eq!(a.round(), 0, "no second round");
}

#[test]
fn without_a_commit_the_grants_are_the_lock() {
    let (mut a, _) = Acquisition::start_once(3, 2, false);
    a.on(granted(0, 0, 4));
    a.on(Event::Unavailable { node: 1, round: 0 });
    assert_eq!(a.on(granted(2, 0, 9)), [Step::Held { token: 9 }]);
    assert_eq!(a.holding_nodes(), [0, 2]);
}
