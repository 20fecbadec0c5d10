use super::*;
use crate::lock::MAX_HOLDS;

fn e(owner: &'static str, mode: Mode, token: u64) -> Entry<'static> {
    Entry {
        owner: owner.as_bytes(),
        mode,
        token,
        holds: 1,
        deadline_ms: 1000 + token,
    }
}

const SEM2: Want = Want::Permit { limit: 2 };

#[test]
fn acquire_decides_by_kind_mode_and_owner() {
    use Mode::{Exclusive as X, Permit as P, Shared as S};
    let reader_a = [e("a", S, 1)];
    let readers = [e("a", S, 1), e("b", S, 2)];
    let writer_a = [e("a", X, 1)];
    let permits = [e("a", P, 1), e("b", P, 2)];
    let cases: [(&str, &[Entry<'_>], &str, Want, Acquire); 13] = [
        ("free, exclusive", &[], "a", Want::Exclusive, Acquire::Grant),
        ("free, shared", &[], "a", Want::Shared, Acquire::Grant),
        ("free, permit", &[], "a", SEM2, Acquire::Grant),
        (
            "readers admit a reader",
            &readers,
            "c",
            Want::Shared,
            Acquire::Grant,
        ),
        (
            "readers exclude a writer",
            &readers,
            "c",
            Want::Exclusive,
            Acquire::Contended,
        ),
        (
            "a writer excludes a reader",
            &writer_a,
            "b",
            Want::Shared,
            Acquire::Contended,
        ),
        (
            "a writer excludes a writer",
            &writer_a,
            "b",
            Want::Exclusive,
            Acquire::Contended,
        ),
        (
            "downgrade keeps the token",
            &writer_a,
            "a",
            Want::Shared,
            Acquire::Downgrade { token: 1 },
        ),
        (
            "upgrade is refused",
            &reader_a,
            "a",
            Want::Exclusive,
            Acquire::UpgradeRefused,
        ),
        ("a full semaphore", &permits, "c", SEM2, Acquire::Contended),
        (
            "a semaphore with room",
            &permits[..1],
            "c",
            SEM2,
            Acquire::Grant,
        ),
        (
            "a semaphore is not a lock",
            &permits,
            "c",
            Want::Shared,
            Acquire::WrongKind {
                is: Kind::Semaphore { limit: 2 },
            },
        ),
        (
            "limits must agree",
            &permits[..1],
            "c",
            Want::Permit { limit: 3 },
            Acquire::WrongKind {
                is: Kind::Semaphore { limit: 2 },
            },
        ),
    ];
    for (name, live, owner, want, expected) in cases {
        let kind = kind_of(live, 2);
        let got = acquire(kind, live, owner.as_bytes(), want, false);
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn a_lock_is_not_a_semaphore() {
    let writer = [e("a", Mode::Exclusive, 1)];
    let got = acquire(kind_of(&writer, 0), &writer, b"b", SEM2, false);
    assert_eq!(got, Acquire::WrongKind { is: Kind::Lock });
}

#[test]
fn the_same_owner_renews_and_reentrancy_counts_up_to_the_limit() {
    let mut mine = e("a", Mode::Permit, 7);
    let live = [mine];
    let renew = acquire(kind_of(&live, 2), &live, b"a", SEM2, false);
    assert_eq!(renew, Acquire::Renew { token: 7, holds: 1 });
    let again = acquire(kind_of(&live, 2), &live, b"a", SEM2, true);
    assert_eq!(again, Acquire::Renew { token: 7, holds: 2 });
    mine.holds = MAX_HOLDS;
    let full = [mine];
    let over = acquire(kind_of(&full, 2), &full, b"a", SEM2, true);
    assert_eq!(over, Acquire::HoldLimit);
}

#[test]
fn release_drops_the_exclusive_entry_first_then_the_shared_one() {
    let mut both = [e("a", Mode::Shared, 3), e("a", Mode::Exclusive, 3)];
    assert_eq!(release(&both, b"a"), Release::Removed { at: 1 });
    assert_eq!(release(&both[..1], b"a"), Release::Removed { at: 0 });
    both[1].holds = 3;
    assert_eq!(
        release(&both, b"a"),
        Release::Decremented { at: 1, holds: 2 }
    );
    assert_eq!(release(&both, b"z"), Release::NotHeld);
}

#[test]
fn extend_and_fence_see_every_entry_of_the_owner() {
    let live = [
        e("a", Mode::Shared, 3),
        e("b", Mode::Shared, 4),
        e("a", Mode::Exclusive, 9),
    ];
    assert_eq!(entries_of(&live, b"a"), vec![0, 2]);
    assert_eq!(newest_of(&live, b"a").map(|x| x.token), Some(9));
    assert_eq!(newest_of(&live, b"c"), None);
}

#[test]
fn wounds_revoke_only_larger_tentative_tickets_and_only_when_enough() {
    use Mode::{Exclusive as X, Permit as P, Shared as S};
    // Tickets: holder token t is tentative with ticket 10 * t when t is odd, committed when even.
    let ticket_of = |x: &Entry<'_>| (x.token % 2 == 1).then_some(x.token * 10);
    let permits = [e("a", P, 1), e("b", P, 3), e("c", P, 2)];
    assert_eq!(wound_victims(&permits, SEM2, 5, ticket_of), Some(vec![1]));
    assert_eq!(wound_victims(&permits, SEM2, 40, ticket_of), None);
    let readers = [e("a", S, 1), e("b", S, 3)];
    assert_eq!(
        wound_victims(&readers, Want::Exclusive, 5, ticket_of),
        Some(vec![0, 1])
    );
    let mixed = [e("a", S, 1), e("b", S, 2)];
    assert_eq!(
        wound_victims(&mixed, Want::Exclusive, 5, ticket_of),
        None,
        "b is committed"
    );
    let writer = [e("a", X, 3)];
    assert_eq!(
        wound_victims(&writer, Want::Shared, 5, ticket_of),
        Some(vec![0])
    );
    assert_eq!(
        wound_victims(&readers, Want::Shared, 5, ticket_of),
        None,
        "nothing blocks"
    );
}

#[test]
fn deadlines_bound_the_next_change_and_the_key() {
    let live = [e("a", Mode::Shared, 5), e("b", Mode::Shared, 2)];
    assert_eq!(next_deadline(&live), Some(1002));
    assert_eq!(last_deadline(&live), Some(1005));
    assert_eq!(next_deadline(&[]), None);
}

fn request(owner: &[u8], ticket: Option<u64>, rank: u64) -> Request<'_> {
    Request {
        owner,
        reentrant: false,
        wait: true,
        ticket,
        rank,
    }
}

#[test]
fn a_queued_writer_holds_back_later_readers() {
    let readers = [e("a", Mode::Shared, 1)];
    let mut queue = Queue::default();
    queue.push(b"w", 10, false, (1000, Want::Exclusive), ());
    let reader = request(b"r", None, 20);
    let got = decide(
        (kind_of(&readers, 0), &readers),
        &queue,
        &reader,
        Want::Shared,
        |_| None,
    );
    assert_eq!(got, Decision::Enqueue);
    let empty = Queue::<()>::default();
    let got = decide(
        (kind_of(&readers, 0), &readers),
        &empty,
        &reader,
        Want::Shared,
        |_| None,
    );
    assert_eq!(got, Decision::Grant);
}

#[test]
fn a_ticket_wounds_a_tentative_permit_for_a_larger_ticket() {
    let permits = [e("a", Mode::Permit, 1), e("b", Mode::Permit, 2)];
    let queue = Queue::<()>::default();
    let ticketed = request(b"c", Some(5), 5);
    let tentative_b = |x: &Entry<'_>| (x.owner == b"b").then_some(9);
    let got = decide(
        (kind_of(&permits, 2), &permits),
        &queue,
        &ticketed,
        SEM2,
        tentative_b,
    );
    assert_eq!(got, Decision::Wound { victims: vec![1] });
}

#[test]
fn the_head_is_served_while_it_fits() {
    let readers = [e("a", Mode::Shared, 1)];
    let shared = serve_head(kind_of(&readers, 0), &readers, b"b", Want::Shared);
    assert_eq!(shared, Serve::Grant { downgrade: None });
    let writer = serve_head(kind_of(&readers, 0), &readers, b"b", Want::Exclusive);
    assert_eq!(writer, Serve::Wait);
    let wrong = serve_head(kind_of(&readers, 0), &readers, b"b", SEM2);
    assert_eq!(wrong, Serve::WrongKind { is: Kind::Lock });
}
