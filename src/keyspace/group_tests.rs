//! The group decoder against valid, truncated, out-of-range and conflicting holders.

use super::*;
use crate::keyspace::codec::tests::{stream, Collect, Field};

fn holder(owner: &str, mode: Mode, token: u64) -> Holder {
    Holder {
        owner: owner.as_bytes().into(),
        mode,
        token,
        holds: 1,
        deadline_ms: 1_700_000_000_000 + token,
    }
}

fn encoded(group: &Group) -> Vec<Field> {
    let mut out = Collect::default();
    encode(group, &mut out);
    out.0
}

fn semaphore(limit: u32, holders: Vec<Holder>) -> Group {
    Group {
        limit,
        place: 7,
        holders,
    }
}

#[test]
fn a_group_round_trips() {
    let group = semaphore(
        3,
        vec![holder("a", Mode::Permit, 5), holder("b", Mode::Permit, 6)],
    );
    let decoded = decode(&mut stream(encoded(&group)), 1);
    assert_eq!(decoded, Ok(group));
    let downgraded = Group {
        limit: 0,
        place: 9,
        holders: vec![
            holder("a", Mode::Exclusive, 5),
            holder("a", Mode::Shared, 5),
        ],
    };
    assert_eq!(decode(&mut stream(encoded(&downgraded)), 1), Ok(downgraded));
}

#[test]
fn every_truncation_is_refused() {
    let fields = encoded(&semaphore(2, vec![holder("a", Mode::Permit, 5)]));
    for cut in 0..fields.len() {
        let got = decode(&mut stream(fields[..cut].to_vec()), 1);
        assert!(
            matches!(got, Err(GroupError::Truncated(_))),
            "cut at {cut}: {got:?}"
        );
    }
}

#[test]
fn holders_that_cannot_coexist_are_refused() {
    use Mode::{Exclusive as X, Permit as P, Shared as S};
    let cases = [
        (
            "two writers",
            semaphore(0, vec![holder("a", X, 1), holder("b", X, 2)]),
        ),
        (
            "a writer and a reader",
            semaphore(0, vec![holder("a", X, 1), holder("b", S, 2)]),
        ),
        ("a permit in a lock", semaphore(0, vec![holder("a", P, 1)])),
        (
            "a reader in a semaphore",
            semaphore(2, vec![holder("a", S, 1)]),
        ),
        (
            "over the limit",
            semaphore(1, vec![holder("a", P, 1), holder("b", P, 2)]),
        ),
        (
            "one owner twice",
            semaphore(2, vec![holder("a", P, 1), holder("a", P, 2)]),
        ),
    ];
    for (name, group) in cases {
        let got = decode(&mut stream(encoded(&group)), 1);
        assert!(
            matches!(got, Err(GroupError::Conflict(_))),
            "{name}: {got:?}"
        );
    }
}

#[test]
fn out_of_range_fields_are_refused() {
    let good = encoded(&semaphore(2, vec![holder("a", Mode::Permit, 5)]));
    // (index of the field, bad value, what must be reported)
    type Case = (usize, Field, fn(&GroupError) -> bool);
    let cases: [Case; 7] = [
        (0, Field::U(u64::from(MAX_LIMIT) + 1), |e| {
            matches!(e, GroupError::Limit(_))
        }),
        (2, Field::U(0), |e| matches!(e, GroupError::Count(0))),
        (3, Field::B(Vec::new()), |e| {
            matches!(e, GroupError::Owner(0))
        }),
        (4, Field::U(3), |e| matches!(e, GroupError::Mode(3))),
        (5, Field::U(0), |e| matches!(e, GroupError::Token(0))),
        (6, Field::U(0), |e| matches!(e, GroupError::Holds(0))),
        (7, Field::U(0), |e| matches!(e, GroupError::Deadline)),
    ];
    for (at, bad, expected) in cases {
        let mut fields = good.clone();
        fields[at] = bad;
        let got = decode(&mut stream(fields), 1);
        assert!(got.as_ref().is_err_and(expected), "field {at}: {got:?}");
    }
    assert_eq!(decode(&mut stream(good), 2), Err(GroupError::Version(2)));
}

#[test]
fn pruning_drops_ended_leases_and_keeps_the_latest_deadline() {
    let mut group = semaphore(
        3,
        vec![holder("a", Mode::Permit, 5), holder("b", Mode::Permit, 9)],
    );
    let now = 1_700_000_000_006;
    assert_eq!(group.live(now).len(), 1);
    assert_eq!(group.ended(now), 1);
    assert_eq!(group.prune(now), 1);
    assert_eq!(group.last_deadline(), Some(1_700_000_000_009));
}
