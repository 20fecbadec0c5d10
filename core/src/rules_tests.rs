use super::*;
use crate::holders::{List, MAX_HOLDS};

use Mode::{Exclusive as X, Permit as P, Shared as S};

const NOW: u64 = 1_000;
const SEM2: Want = Want::Permit { limit: 2 };

/// A live holder (its lease ends after `NOW`).
fn e(owner: &'static str, mode: Mode, token: u64) -> Holder<'static> {
    Holder {
        owner: owner.as_bytes(),
        mode,
        token,
        holds: 1,
        deadline_ms: NOW + token,
    }
}

fn list<'a>(holders: &'a [Holder<'a>], limit: u32) -> List<'a> {
    List {
        holders,
        limit,
        now_ms: NOW,
    }
}

fn req(owner: &[u8], want: Want, ticket: Option<u64>, rank: u64) -> Request<'_> {
    Request {
        owner,
        want,
        reentrant: false,
        wait: true,
        ticket,
        rank,
    }
}

fn queue(entries: &[(&[u8], u64)]) -> Queue<()> {
    let mut q = Queue::default();
    for &(owner, rank) in entries {
        q.push(owner, rank, true, (1_000, Want::Exclusive), ());
    }
    q
}

/// A name, the holders and the limit, who asks for what, and the answer.
type Case<'a> = (&'a str, &'a [Holder<'a>], u32, &'a str, Want, Acquire);

#[test]
fn acquire_decides_by_kind_mode_and_owner() {
    let reader_a = [e("a", S, 1)];
    let readers = [e("a", S, 1), e("b", S, 2)];
    let writer_a = [e("a", X, 1)];
    let permits = [e("a", P, 1), e("b", P, 2)];
    let wrong = |is| Acquire::WrongKind { is };
    #[rustfmt::skip]
    let cases: [Case<'_>; 16] = [
        ("free, exclusive", &[], 0, "a", Want::Exclusive, Acquire::Grant),
        ("free, shared", &[], 0, "a", Want::Shared, Acquire::Grant),
        ("free, permit", &[], 0, "a", SEM2, Acquire::Grant),
        ("readers admit a reader", &readers, 0, "c", Want::Shared, Acquire::Grant),
        ("readers exclude a writer", &readers, 0, "c", Want::Exclusive, Acquire::Contended),
        ("a writer excludes a reader", &writer_a, 0, "b", Want::Shared, Acquire::Contended),
        ("a writer excludes a writer", &writer_a, 0, "b", Want::Exclusive, Acquire::Contended),
        ("the owner's bytes must match", &writer_a, 0, "a\0", Want::Exclusive, Acquire::Contended),
        ("downgrade keeps the token", &writer_a, 0, "a", Want::Shared, Acquire::Downgrade { token: 1 }),
        ("upgrade is refused", &reader_a, 0, "a", Want::Exclusive, Acquire::UpgradeRefused),
        ("a full semaphore", &permits, 2, "c", SEM2, Acquire::Contended),
        ("a semaphore with room", &permits[..1], 2, "c", SEM2, Acquire::Grant),
        ("a semaphore is not a lock", &permits, 2, "c", Want::Shared, wrong(Kind::Semaphore { limit: 2 })),
        ("limits must agree", &permits[..1], 2, "c", Want::Permit { limit: 3 }, wrong(Kind::Semaphore { limit: 2 })),
        ("a lock is not a semaphore", &writer_a, 0, "b", SEM2, wrong(Kind::Lock)),
        ("the holder renews", &writer_a, 0, "a", Want::Exclusive, Acquire::Renew { token: 1, holds: 1 }),
    ];
    for (name, holders, limit, owner, want, expected) in cases {
        let got = acquire(&list(holders, limit), owner.as_bytes(), want, false);
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn a_holder_is_live_strictly_before_its_deadline() {
    let writer = [Holder {
        deadline_ms: NOW,
        ..e("a", X, 1)
    }];
    let ended = list(&writer, 0);
    assert_eq!(ended.count(), 0);
    assert_eq!(ended.kind(), None);
    assert_eq!(
        acquire(&ended, b"b", Want::Exclusive, false),
        Acquire::Grant
    );
    let just_before = List {
        now_ms: NOW - 1,
        ..ended
    };
    assert_eq!(just_before.count(), 1);
    assert_eq!(
        acquire(&just_before, b"b", Want::Shared, false),
        Acquire::Contended
    );
}

#[test]
fn reentrancy_counts_holds_up_to_the_limit() {
    let mut mine = e("a", P, 7);
    let one = [mine];
    let renew = acquire(&list(&one, 2), b"a", SEM2, false);
    assert_eq!(renew, Acquire::Renew { token: 7, holds: 1 });
    let again = acquire(&list(&one, 2), b"a", SEM2, true);
    assert_eq!(again, Acquire::Renew { token: 7, holds: 2 });
    mine.holds = MAX_HOLDS;
    let full = [mine];
    let over = acquire(&list(&full, 2), b"a", SEM2, true);
    assert_eq!(over, Acquire::HoldLimit);
}

#[test]
fn release_drops_the_exclusive_entry_first_then_the_shared_one() {
    let mut both = [e("a", S, 3), e("a", X, 3)];
    let removed = |mode, last| Release::Removed { mode, last };
    assert_eq!(release(&list(&both, 0), b"a"), removed(X, false));
    assert_eq!(release(&list(&both[..1], 0), b"a"), removed(S, true));
    both[1].holds = 3;
    let decremented = Release::Decremented { mode: X, holds: 2 };
    assert_eq!(release(&list(&both, 0), b"a"), decremented);
    assert_eq!(release(&list(&both, 0), b"z"), Release::NotHeld);
    assert_eq!(release(&list(&[], 0), b"a"), Release::NotHeld);
}

#[test]
fn extend_and_fence_see_every_entry_of_the_owner() {
    let held = [e("a", S, 3), e("b", S, 4), e("a", X, 9)];
    let h = list(&held, 0);
    let modes: Vec<Mode> = h.mine(b"a").iter().map(|x| x.mode).collect();
    assert_eq!(modes, [X, S]);
    assert_eq!(h.mine(b"a").newest().map(|x| x.token), Some(9));
    assert_eq!(h.mine(b"c").newest(), None);
}

/// Holder token t is tentative with ticket 10 * t when t is odd, committed when even.
fn marks_for(holders: &[Holder<'_>]) -> Tentatives {
    let mut marks = Tentatives::default();
    for x in holders.iter().filter(|x| x.token % 2 == 1) {
        marks.mark(x.owner, x.token, x.token * 10);
    }
    marks
}

fn victims(pairs: &[(&str, Mode)]) -> Option<Vec<Victim>> {
    let owned = pairs.iter().map(|&(o, mode)| Victim {
        owner: o.as_bytes().to_vec(),
        mode,
    });
    Some(owned.collect())
}

#[test]
fn wounds_revoke_only_larger_tentative_tickets_and_only_when_enough() {
    let permits = [e("a", P, 1), e("b", P, 3), e("c", P, 2)];
    let wound = |holders: &[Holder<'_>], limit, want, ticket| {
        wound_victims(&list(holders, limit), &marks_for(holders), want, ticket)
    };
    assert_eq!(wound(&permits, 3, SEM2, 5), victims(&[("b", P)]));
    assert_eq!(wound(&permits, 3, SEM2, 40), None);
    let readers = [e("a", S, 1), e("b", S, 3)];
    let both = victims(&[("b", S), ("a", S)]);
    assert_eq!(wound(&readers, 0, Want::Exclusive, 5), both);
    let mixed = [e("a", S, 1), e("b", S, 2)];
    assert_eq!(wound(&mixed, 0, Want::Exclusive, 5), None, "b is committed");
    let writer = [e("a", X, 3)];
    assert_eq!(wound(&writer, 0, Want::Shared, 5), victims(&[("a", X)]));
    assert_eq!(wound(&readers, 0, Want::Shared, 5), None, "nothing blocks");
}

#[test]
fn a_downgraded_writer_is_wounded_whole_by_an_exclusive_request() {
    let downgraded = [e("a", X, 3), e("a", S, 3)];
    let got = wound_victims(
        &list(&downgraded, 0),
        &marks_for(&downgraded),
        Want::Exclusive,
        5,
    );
    assert_eq!(got, victims(&[("a", X), ("a", S)]));
}

#[test]
fn a_free_resource_is_granted_unless_someone_is_ranked_ahead() {
    let free = list(&[], 0);
    let none = Tentatives::default();
    let a = |ticket, rank| req(b"a", Want::Exclusive, ticket, rank);
    assert_eq!(
        decide(&free, &none, &queue(&[]), &a(None, 5)),
        Decision::Grant
    );
    let q = queue(&[(b"w", 3)]);
    assert_eq!(decide(&free, &none, &q, &a(Some(5), 5)), Decision::Enqueue);
    let ahead = decide(&free, &none, &q, &a(Some(2), 2));
    assert_eq!(ahead, Decision::Grant, "ranked ahead of the queue");
    let no_wait = Request {
        wait: false,
        ..a(None, 5)
    };
    let got = decide(&free, &none, &q, &no_wait);
    assert_eq!(got, Decision::Contended, "never jumps the queue");
}

#[test]
fn the_holder_renews_and_never_queues() {
    let held = [e("a", X, 7)];
    let q = queue(&[(b"w", 1)]);
    let got = decide(
        &list(&held, 0),
        &Tentatives::default(),
        &q,
        &req(b"a", Want::Exclusive, Some(9), 9),
    );
    assert_eq!(got, Decision::Renew { token: 7, holds: 1 });
}

#[test]
fn a_smaller_ticket_wounds_a_tentative_grant_only() {
    let held = [e("b", X, 7)];
    let h = list(&held, 0);
    let mut marks = Tentatives::default();
    marks.mark(b"b", 7, 20);
    let q = queue(&[]);
    let a = |ticket, rank| req(b"a", Want::Exclusive, ticket, rank);
    let wound = Decision::Wound {
        victims: vec![Victim {
            owner: b"b".to_vec(),
            mode: X,
        }],
    };
    assert_eq!(decide(&h, &marks, &q, &a(Some(10), 10)), wound);
    let larger = decide(&h, &marks, &q, &a(Some(30), 30));
    assert_eq!(larger, Decision::Enqueue, "a larger ticket waits");
    let committed = decide(&h, &Tentatives::default(), &q, &a(Some(10), 10));
    assert_eq!(committed, Decision::Enqueue, "committed: never revoked");
    let plain = decide(&h, &marks, &q, &a(None, 10));
    assert_eq!(plain, Decision::Enqueue, "un-ticketed never wounds");
    let mut stale = Tentatives::default();
    stale.mark(b"b", 6, 20);
    let earlier = decide(&h, &stale, &q, &a(Some(10), 10));
    assert_eq!(earlier, Decision::Enqueue, "a mark of an earlier grant");
    let no_wait = Request {
        wait: false,
        ..a(Some(30), 30)
    };
    assert_eq!(decide(&h, &marks, &q, &no_wait), Decision::Contended);
}

#[test]
fn a_queued_writer_holds_back_later_readers() {
    let readers = [e("a", S, 1)];
    let h = list(&readers, 0);
    let mut q = Queue::default();
    q.push(b"w", 10, false, (1000, Want::Exclusive), ());
    let reader = req(b"r", Want::Shared, None, 20);
    let none = Tentatives::default();
    assert_eq!(decide(&h, &none, &q, &reader), Decision::Enqueue);
    let empty = Queue::<()>::default();
    assert_eq!(decide(&h, &none, &empty, &reader), Decision::Grant);
}

#[test]
fn a_ticket_wounds_a_tentative_permit_for_a_larger_ticket() {
    let permits = [e("a", P, 1), e("b", P, 2)];
    let mut marks = Tentatives::default();
    marks.mark(b"b", 2, 9);
    let got = decide(
        &list(&permits, 2),
        &marks,
        &Queue::<()>::default(),
        &req(b"c", SEM2, Some(5), 5),
    );
    assert_eq!(
        got,
        Decision::Wound {
            victims: victims(&[("b", P)]).unwrap()
        }
    );
}

#[test]
fn the_head_is_served_while_it_fits() {
    let readers = [e("a", S, 1)];
    let h = list(&readers, 0);
    let shared = serve_head(&h, b"b", Want::Shared);
    assert_eq!(shared, Serve::Grant { downgrade: None });
    assert_eq!(serve_head(&h, b"b", Want::Exclusive), Serve::Wait);
    let wrong = serve_head(&h, b"b", SEM2);
    assert_eq!(wrong, Serve::WrongKind { is: Kind::Lock });
    let free = serve_head(&list(&[], 0), b"b", Want::Exclusive);
    assert_eq!(free, Serve::Grant { downgrade: None });
    let writer = [e("a", X, 4)];
    let down = serve_head(&list(&writer, 0), b"a", Want::Shared);
    assert_eq!(down, Serve::Grant { downgrade: Some(4) });
}

#[test]
fn a_wound_never_jumps_a_waiter_ranked_ahead() {
    // A set with ticket 5 waits on this key (another of its keys is held); a single request
    // with ticket 10 could revoke the tentative holder (ticket 20), but waits its turn.
    let held = [e("b", X, 7)];
    let mut marks = Tentatives::default();
    marks.mark(b"b", 7, 20);
    let ahead = queue(&[(b"set", 5)]);
    let asked = req(b"a", Want::Exclusive, Some(10), 10);
    assert_eq!(
        decide(&list(&held, 0), &marks, &ahead, &asked),
        Decision::Enqueue
    );
    let behind = queue(&[(b"set", 15)]);
    assert!(matches!(
        decide(&list(&held, 0), &marks, &behind, &asked),
        Decision::Wound { .. }
    ));
}
