use super::*;
use crate::holders::Want;

fn queue(entries: &[(&[u8], u64, bool)]) -> Queue<()> {
    let mut q = Queue::default();
    for &(owner, rank, ticketed) in entries {
        q.push(owner, rank, ticketed, (1_000, Want::Exclusive), ());
    }
    q
}

#[test]
fn waiters_are_served_by_rank_then_arrival() {
    let mut q = queue(&[
        (b"c", 30, true),
        (b"a", 10, true),
        (b"b", 30, true),
        (b"d", 20, false),
    ]);
    let order: Vec<&[u8]> = std::iter::from_fn(|| q.pop())
        .map(|w| w.owner.leak() as &[u8])
        .collect();
    assert_eq!(order, [&b"a"[..], b"d", b"c", b"b"]);
}

#[test]
fn asking_again_keeps_one_place() {
    let mut q = queue(&[(b"a", 10, true), (b"b", 20, true)]);
    let replaced = q.push(b"a", 10, true, (5, Want::Exclusive), ());
    assert_eq!(replaced.map(|w| w.ttl_ms), Some(1_000));
    assert_eq!(q.len(), 2);
    assert_eq!(q.head().unwrap().owner, b"a");
}

#[test]
fn gone_waiters_leave_at_once() {
    let mut q = queue(&[(b"a", 1, true), (b"b", 2, true), (b"c", 3, true)]);
    let gone = q.remove_where(|w| w.owner == b"b");
    assert_eq!(gone.len(), 1);
    assert!(q.remove_owner(b"c").is_some());
    assert_eq!(
        q.iter().map(|w| w.owner.clone()).collect::<Vec<_>>(),
        [b"a".to_vec()]
    );
}

#[test]
fn a_timeout_takes_out_only_the_waiter_it_names() {
    let mut q: Queue<u32> = Queue::default();
    q.push(b"a", 1, false, (1_000, Want::Exclusive), 7);
    assert!(q.remove_owner_if(b"a", |w| w.handle == 8).is_none());
    assert!(q.contains_owner(b"a"));
    assert_eq!(
        q.remove_owner_if(b"a", |w| w.handle == 7).map(|w| w.handle),
        Some(7)
    );
    assert!(q.is_empty() && !q.contains_owner(b"a"));
}

/// One step a queue can take, for the comparison with a plain sorted vector below.
#[derive(Debug, Clone)]
enum Step {
    Push(u8, u64),
    Pop,
    Withdraw(u8),
    Gone(u8),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (0u8..6, 0u64..4).prop_map(|(o, r)| Step::Push(o, r)),
        Just(Step::Pop),
        (0u8..6).prop_map(Step::Withdraw),
        (0u8..6).prop_map(Step::Gone),
    ]
}

proptest::proptest! {
    /// The queue serves exactly as a vector kept sorted by (rank, arrival) with one place per
    /// owner would: the obvious model of the rules, whatever the steps.
    #[test]
    fn the_queue_serves_as_a_sorted_vector_would(steps in proptest::collection::vec(step(), 0..60)) {
        let mut q: Queue<()> = Queue::default();
        let mut model: Vec<(u64, u64, u8)> = Vec::new();
        let mut seq = 0;
        for s in steps {
            match s {
                Step::Push(o, rank) => {
                    model.retain(|&(_, _, owner)| owner != o);
                    model.push((rank, seq, o));
                    model.sort();
                    seq += 1;
                    q.push(&[o], rank, false, (1_000, Want::Exclusive), ());
                }
                Step::Pop => {
                    let want = (!model.is_empty()).then(|| model.remove(0).2);
                    proptest::prop_assert_eq!(q.pop().map(|w| w.owner[0]), want);
                }
                Step::Withdraw(o) => {
                    let had = model.iter().any(|m| m.2 == o);
                    model.retain(|m| m.2 != o);
                    proptest::prop_assert_eq!(q.remove_owner(&[o]).is_some(), had);
                }
                Step::Gone(o) => {
                    model.retain(|m| m.2 != o);
                    q.remove_where(|w| w.owner == [o]);
                }
            }
            let order: Vec<u8> = q.iter().map(|w| w.owner[0]).collect();
            let expected: Vec<u8> = model.iter().map(|m| m.2).collect();
            proptest::prop_assert_eq!(order, expected);
            proptest::prop_assert_eq!(q.has_ahead(1), model.first().is_some_and(|m| m.0 <= 1));
        }
    }
}
