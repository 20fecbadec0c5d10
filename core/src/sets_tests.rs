use super::*;
use crate::holders::{Kind, Mode, Want};

fn victim(owner: &str) -> Victim {
    Victim {
        owner: owner.as_bytes().to_vec(),
        mode: Mode::Exclusive,
    }
}

#[test]
fn a_set_is_granted_only_when_every_member_is() {
    use Decision::*;
    assert_eq!(decide_set(&[Grant, Grant, Grant]), SetDecision::Grant);
    assert_eq!(
        decide_set(&[Grant, Contended, Grant]),
        SetDecision::Contended
    );
    assert_eq!(decide_set(&[Enqueue, Grant]), SetDecision::Enqueue);
    // One member to wait for and one to wound: nothing is wounded, the set waits.
    let wound = Wound {
        victims: vec![victim("t")],
    };
    assert_eq!(decide_set(&[wound.clone(), Enqueue]), SetDecision::Enqueue);
    assert_eq!(
        decide_set(&[Contended, wound.clone()]),
        SetDecision::Contended
    );
    assert_eq!(
        decide_set(&[Grant, wound]),
        SetDecision::Wound {
            victims: vec![(1, vec![victim("t")])]
        }
    );
}

#[test]
fn an_error_on_any_member_refuses_the_set_whatever_the_others_say() {
    use Decision::*;
    let wrong = WrongKind {
        is: Kind::Semaphore { limit: 2 },
    };
    assert_eq!(
        decide_set(&[Enqueue, wrong.clone()]),
        SetDecision::Refused {
            member: 1,
            why: wrong
        }
    );
    let down = Downgrade { token: 7 };
    assert_eq!(
        decide_set(&[Grant, down.clone()]),
        SetDecision::Refused {
            member: 1,
            why: down
        }
    );
}

#[test]
fn the_same_set_asked_again_renews_and_a_set_held_in_part_is_refused() {
    use Decision::*;
    let renew = |token| Renew { token, holds: 1 };
    assert_eq!(
        decide_set(&[renew(9), renew(9)]),
        SetDecision::Renew { token: 9 }
    );
    assert_eq!(
        decide_set(&[Grant, renew(9)]),
        SetDecision::Refused {
            member: 1,
            why: renew(9)
        }
    );
    // Held under two tokens: two holds, not this set.
    assert!(matches!(
        decide_set(&[renew(9), renew(10)]),
        SetDecision::Refused { member: 0, .. }
    ));
}

#[test]
fn a_waiting_set_is_served_only_at_the_head_of_every_member_with_all_free() {
    let grant = Some(Serve::Grant { downgrade: None });
    assert_eq!(serve_set(&[grant, grant]), SetServe::Grant);
    assert_eq!(serve_set(&[grant, None]), SetServe::Wait);
    assert_eq!(serve_set(&[grant, Some(Serve::Wait)]), SetServe::Wait);
    let wrong = Serve::WrongKind {
        is: Kind::Semaphore { limit: 1 },
    };
    assert_eq!(
        serve_set(&[None, Some(wrong)]),
        SetServe::Fail {
            member: 1,
            why: wrong
        }
    );
}

#[test]
fn keys_are_one_to_max_set_and_none_twice() {
    assert_eq!(check_keys::<&str>(&[]), Err(BadSet::Empty));
    assert_eq!(check_keys(&["a", "b", "a"]), Err(BadSet::Repeated(2)));
    let many: Vec<usize> = (0..=MAX_SET).collect();
    assert_eq!(check_keys(&many), Err(BadSet::TooMany));
    assert_eq!(check_keys(&many[..MAX_SET]), Ok(()));
    let _ = Want::Shared;
}

#[test]
fn one_node_wide_order_puts_the_smallest_waiter_at_the_head_of_every_queue() {
    use crate::queue::Queue;
    // Three queues, waiters arriving with one node-wide numbering: whatever the sets, the
    // smallest (rank, arrival) heads every queue it is in.
    let mut queues: Vec<Queue<()>> = vec![Queue::new(), Queue::new(), Queue::new()];
    let arrivals: [(&str, u64, &[usize]); 5] = [
        ("s1", 30, &[0, 1]),
        ("s2", 20, &[1, 2]),
        ("s3", 30, &[2, 0]),
        ("s4", 10, &[0]),
        ("s5", 20, &[0, 2]),
    ];
    for (seq, (owner, rank, members)) in arrivals.iter().enumerate() {
        for &m in *members {
            let w = (1_000, Want::Exclusive);
            queues[m].push_at(owner.as_bytes(), (*rank, seq as u64), false, w, ());
        }
    }
    let (smallest, _, members) = arrivals
        .iter()
        .enumerate()
        .min_by_key(|(seq, (_, rank, _))| (*rank, *seq))
        .map(|(_, a)| *a)
        .expect("arrivals");
    for &m in members {
        assert_eq!(
            queues[m].head().map(|w| &w.owner[..]),
            Some(smallest.as_bytes())
        );
    }
    // After it leaves, the next smallest heads all of its queues too.
    for &m in members {
        queues[m].remove_owner(smallest.as_bytes());
    }
    for &m in &[1usize, 2] {
        assert_eq!(queues[m].head().map(|w| &w.owner[..]), Some(&b"s2"[..]));
    }
}
