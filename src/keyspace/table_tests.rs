//! The table against the obvious model of the rules: a plain list of holders, scanned whole for
//! every question (core's `List`), and the coexistence rules checked pairwise.

use dlock_core::holders::List;
use proptest::prelude::*;

use super::*;

fn slot(owner: u8, mode: Mode, token: u64, deadline_ms: u64) -> Slot {
    Slot {
        owner: vec![owner].into(),
        mode,
        lease: Lease {
            token,
            holds: 1,
            deadline_ms,
        },
    }
}

/// Whether `new` may join `list` in a table of `limit`, pairwise as the rules say.
fn coexists(list: &[Slot], limit: u32, new: &Slot) -> bool {
    let all: Vec<&Slot> = list.iter().chain(std::iter::once(new)).collect();
    let permits = all.iter().filter(|s| s.mode == Mode::Permit).count();
    let kind_ok = match limit {
        0 => permits == 0,
        k => permits == all.len() && permits <= k as usize,
    };
    let writer_ok = all.iter().filter(|s| s.mode == Mode::Exclusive).all(|w| {
        let same = |s: &&&Slot| s.owner == w.owner;
        all.iter().filter(|s| s.mode == Mode::Exclusive).count() == 1
            && all.iter().all(|s| same(&s))
    });
    let once = !list
        .iter()
        .any(|s| s.owner == new.owner && s.mode == new.mode);
    kind_ok && writer_ok && once
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, Mode, u64, u64),
    Remove(u8, Mode),
    Extend(u8, Mode, u64),
    Prune(u64, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let mode = prop_oneof![
        Just(Mode::Exclusive),
        Just(Mode::Shared),
        Just(Mode::Permit)
    ];
    prop_oneof![
        4 => (0u8..5, mode.clone(), 1u64..4, 1u64..8).prop_map(|(o, m, t, d)| Op::Insert(o, m, t, d)),
        1 => (0u8..5, mode.clone()).prop_map(|(o, m)| Op::Remove(o, m)),
        1 => (0u8..5, mode, 1u64..8).prop_map(|(o, m, d)| Op::Extend(o, m, d)),
        1 => (0u64..8, 0usize..3).prop_map(|(now, most)| Op::Prune(now, most)),
    ]
}

fn holder_list(list: &[Slot]) -> Vec<Holder<'_>> {
    list.iter().map(Slot::holder).collect()
}

proptest! {
    #[test]
    fn the_table_answers_as_a_scanned_list_would(
        limit in prop_oneof![Just(0u32), Just(2), Just(3)],
        ops in proptest::collection::vec(op(), 0..40),
    ) {
        let mut table = HolderTable::new(limit, 1);
        let mut model: Vec<Slot> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(o, m, t, d) => {
                    let new = slot(o, m, t, d);
                    let expected = coexists(&model, limit, &new);
                    prop_assert_eq!(table.insert(new.clone()).is_ok(), expected, "insert");
                    if expected {
                        model.push(new);
                    }
                }
                Op::Remove(o, m) => {
                    let at = model.iter().position(|s| *s.owner == [o] && s.mode == m);
                    let gone = table.remove(&[o], m);
                    prop_assert_eq!(gone, at.map(|i| model.remove(i)));
                }
                Op::Extend(o, m, d) => {
                    let found = model.iter_mut().find(|s| *s.owner == [o] && s.mode == m);
                    let expected = found.map(|s| s.lease.deadline_ms = d).is_some();
                    prop_assert_eq!(table.update(&[o], m, |l| l.deadline_ms = d), expected);
                }
                Op::Prune(now, most) => {
                    let gone = table.prune(now, most);
                    prop_assert!(gone.len() <= most);
                    prop_assert!(gone.windows(2).all(|w| w[0].lease.deadline_ms <= w[1].lease.deadline_ms));
                    for g in &gone {
                        prop_assert!(g.lease.deadline_ms <= now);
                        model.retain(|s| !(s.owner == g.owner && s.mode == g.mode));
                    }
                    let left_ended = model.iter().filter(|s| s.lease.deadline_ms <= now).count();
                    prop_assert!(gone.len() == most || left_ended == 0);
                }
            }
            prop_assert_eq!(table.len(), model.len());
            let last = model.iter().map(|s| s.lease.deadline_ms).max();
            prop_assert_eq!(table.last_deadline(), last);
            for now in 0..9 {
                let holders = holder_list(&model);
                let list = List { holders: &holders, limit, now_ms: now };
                let view = table.view(now);
                prop_assert_eq!(view.count(), list.count());
                prop_assert_eq!(view.exclusive(), list.exclusive());
                prop_assert_eq!(table.ended(now), model.len() - list.count());
                let next = model.iter().map(|s| s.lease.deadline_ms).filter(|&d| d > now).min();
                prop_assert_eq!(view.next_deadline(), next);
                let mut live: Vec<u64> = view.live().map(|h| h.deadline_ms).collect();
                prop_assert!(live.windows(2).all(|w| w[0] <= w[1]));
                live.sort_unstable();
                let mut expected: Vec<u64> = model.iter().map(|s| s.lease.deadline_ms).filter(|&d| d > now).collect();
                expected.sort_unstable();
                prop_assert_eq!(live, expected);
                for o in 0u8..5 {
                    prop_assert_eq!(view.mine(&[o]), list.mine(&[o]));
                }
            }
        }
    }
}

#[test]
fn tokens_may_repeat_across_owners() {
    let mut table = HolderTable::new(3, 1);
    for owner in 0..3 {
        table.insert(slot(owner, Mode::Permit, 9, 5)).unwrap();
    }
    assert_eq!(
        table.remove(&[1], Mode::Permit).map(|s| s.owner),
        Some(vec![1].into())
    );
    assert_eq!(table.prune(5, 9).len(), 2);
    assert!(table.is_empty());
}

#[test]
fn a_plain_lock_becomes_a_table_of_one() {
    let table = HolderTable::of_one(slot(1, Mode::Exclusive, 4, 9), 7);
    assert_eq!((table.len(), table.limit(), table.place), (1, 0, 7));
    assert!(
        table.check(&[1], Mode::Shared).is_ok(),
        "its owner's shared side"
    );
    assert_eq!(table.check(&[2], Mode::Shared), Err(Conflict::Exclusive));
    assert_eq!(table.check_upsert(&[1], Mode::Exclusive, 0), Ok(()));
    assert_eq!(
        table.check_upsert(&[2], Mode::Permit, 2),
        Err(Conflict::WrongKind)
    );
}
