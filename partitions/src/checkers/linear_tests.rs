//! A reader's read joins the register's check: a read of a value already replaced before the
//! read began has no linearization; a read of the current value has one.

use super::*;
use crate::history::{pair, Event};

const MS: u64 = 1_000_000;

fn op(process: u32, f: F, (from, to): (u64, u64), read: u64, new: Option<u64>) -> Vec<Event> {
    let mut invoke = Event::new(process, Kind::Invoke, f);
    (invoke.mono_ns, invoke.new) = (from * MS, new);
    let mut ok = Event::new(process, Kind::Ok, f);
    (ok.mono_ns, ok.read, ok.new) = (to * MS, Some(read), new);
    vec![invoke, ok]
}

fn verdict(ops: Vec<Vec<Event>>) -> Linear {
    let events: Vec<Event> = ops.into_iter().flatten().collect();
    check(&pair(&events), Duration::from_secs(5))
}

#[test]
fn a_read_of_the_current_value_is_linearizable() {
    let v = verdict(vec![
        op(1, F::Cas, (0, 100), 0, Some(7)),
        op(2, F::Read, (200, 210), 7, None),
    ]);
    assert!(matches!(v, Linear::Valid { ops: 2 }), "{v:?}");
}

#[test]
fn a_read_of_a_replaced_value_is_not() {
    let v = verdict(vec![
        op(1, F::Cas, (0, 100), 0, Some(7)),
        op(2, F::Read, (200, 210), 0, None),
    ]);
    assert!(matches!(v, Linear::Invalid { .. }), "{v:?}");
}
