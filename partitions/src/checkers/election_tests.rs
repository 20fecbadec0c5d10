//! Synthetic election histories: a clean one passes, each anomaly is found, and an overlap
//! under a broken assumption is reported as expected.

use std::time::Duration;

use super::*;
use crate::checkers::linear::{self, Linear};
use crate::checkers::lock;
use crate::history::{pair, Event};

const MS: u64 = 1_000_000;

fn ev(process: u32, kind: Kind, f: F, ms: u64, epoch: u64) -> Event {
    let mut e = Event::new(process, kind, f);
    (e.mono_ns, e.wall_ms, e.token) = (ms * MS, ms, Some(epoch));
    e
}

/// A campaign from `from` to `won` ms winning `epoch`.
fn campaign(p: u32, from: u64, won: u64, epoch: u64) -> Vec<Event> {
    let mut invoke = ev(p, Kind::Invoke, F::Campaign, from, epoch);
    invoke.token = None;
    vec![invoke, ev(p, Kind::Ok, F::Campaign, won, epoch)]
}

/// A CAS from `from` to `to` ms that read `read` and wrote `new` (sent at `to` - 1).
fn cas(p: u32, (from, to): (u64, u64), epoch: u64, (read, new): (u64, u64)) -> Vec<Event> {
    let mut invoke = ev(p, Kind::Invoke, F::Cas, from, epoch);
    invoke.new = Some(new);
    let mut done = ev(p, Kind::Ok, F::Cas, to, epoch);
    (done.read, done.new, done.write_ns) = (Some(read), Some(new), Some((to - 1) * MS));
    vec![invoke, done]
}

fn resign(p: u32, at: u64, epoch: u64) -> Vec<Event> {
    vec![
        ev(p, Kind::Invoke, F::Resign, at, epoch),
        ev(p, Kind::Ok, F::Resign, at + 2, epoch),
    ]
}

fn lost(p: u32, at: u64, epoch: u64) -> Vec<Event> {
    vec![ev(p, Kind::Ok, F::Lost, at, epoch)]
}

fn checked(events: Vec<Vec<Event>>, faults: &[Window]) -> (Checked, Linear) {
    let events: Vec<Event> = events.into_iter().flatten().collect();
    let ops = pair(&events);
    let mut c = lock::check(&ops, faults, 0, 1_000 * MS);
    check(&ops, faults, 0, 1_000 * MS, &mut c);
    (c, linear::check(&ops, Duration::from_secs(10)))
}

fn kinds(c: &Checked) -> Vec<&'static str> {
    c.anomalies.iter().map(|a| a.kind).collect()
}

/// Two terms handed over by resignation, then a third after a loss signal.
fn clean() -> Vec<Vec<Event>> {
    vec![
        campaign(1, 0, 10, 100),
        cas(1, (20, 40), 100, (0, 1_000_001)),
        campaign(2, 5, 52, 200),
        resign(1, 50, 100),
        cas(2, (60, 80), 200, (1_000_001, 2_000_001)),
        lost(2, 90, 200),
        campaign(3, 30, 95, 300),
        cas(3, (100, 120), 300, (2_000_001, 3_000_001)),
        resign(3, 130, 300),
    ]
}

#[test]
fn a_clean_history_passes() {
    let (c, linear) = checked(clean(), &[]);
    assert!(c.anomalies.is_empty(), "{:?}", c.anomalies);
    assert!(c.expected.is_empty());
    assert!(matches!(linear, Linear::Valid { ops: 3 }), "{linear:?}");
    let events: Vec<Event> = clean().into_iter().flatten().collect();
    let s = summary(&pair(&events));
    assert_eq!(s["won"], 3);
    assert_eq!(s["ended_by_resignation"], 2);
    assert_eq!(s["ended_by_loss_signal"], 1);
}

#[test]
fn a_loss_signal_inside_a_cas_does_not_close_it() {
    let mut h = vec![campaign(1, 0, 10, 100), cas(1, (20, 40), 100, (0, 1))];
    h.push(lost(1, 30, 100));
    let events: Vec<Event> = h.into_iter().flatten().collect();
    let ops = pair(&events);
    let cas = ops.iter().find(|o| o.invoke.f == F::Cas).map(Op::end_ns);
    assert_eq!(cas, Some(40 * MS));
    assert_eq!(terms(&ops)[0].end, End::Lost);
    assert_eq!(terms(&ops)[0].until, 30 * MS);
}

fn overlapping() -> Vec<Vec<Event>> {
    vec![
        campaign(1, 0, 10, 100),
        campaign(2, 5, 50, 200),
        resign(1, 100, 100),
        resign(2, 150, 200),
    ]
}

#[test]
fn overlapping_leaderships_are_found() {
    let (c, _) = checked(overlapping(), &[]);
    assert_eq!(kinds(&c), ["overlapping leaderships"]);
    assert!(
        c.anomalies[0].detail.contains("for 50 ms"),
        "{:?}",
        c.anomalies
    );
}

#[test]
fn an_overlap_under_a_broken_assumption_is_expected() {
    let pause = Window {
        name: "SIGSTOP the holder".into(),
        start_ns: 20 * MS,
        end_ns: 40 * MS,
        start_wall_ms: 20,
        breaks: Some("a leader is not paused past its lease".into()),
        skipped: None,
    };
    let (c, _) = checked(overlapping(), &[pause]);
    assert!(c.anomalies.is_empty(), "{:?}", c.anomalies);
    assert_eq!(c.expected.len(), 1);
}

#[test]
fn a_leadership_ends_with_its_process() {
    // Process 1 never resigned nor heard a loss: its belief ends with its last event (40).
    let h = vec![
        campaign(1, 0, 10, 100),
        cas(1, (20, 40), 100, (0, 1)),
        campaign(2, 5, 50, 200),
    ];
    let (c, _) = checked(h, &[]);
    assert!(c.anomalies.is_empty(), "{:?}", c.anomalies);
}

#[test]
fn an_epoch_that_does_not_rise_is_found() {
    let h = vec![
        campaign(1, 0, 10, 300),
        resign(1, 20, 300),
        campaign(2, 30, 40, 200),
        resign(2, 50, 200),
    ];
    let (c, _) = checked(h, &[]);
    assert_eq!(kinds(&c), ["epoch order"]);
}

#[test]
fn a_deposed_leaders_late_write_is_found() {
    // Process 1 (epoch 100) reads 0 at 20, is stopped, and writes at 199 after process 2
    // (epoch 200) wrote: a stale write accepted, and a lost update.
    let h = vec![
        campaign(1, 0, 10, 100),
        cas(1, (20, 200), 100, (0, 1_000_001)),
        campaign(2, 5, 120, 200),
        cas(2, (130, 150), 200, (0, 2_000_001)),
        lost(1, 201, 100),
        resign(2, 160, 200),
    ];
    let pause = Window {
        name: "SIGSTOP the holder".into(),
        start_ns: 25 * MS,
        end_ns: 195 * MS,
        start_wall_ms: 25,
        breaks: Some("a leader is not paused past its lease".into()),
        skipped: None,
    };
    let (c, linear) = checked(h, &[pause]);
    assert_eq!(kinds(&c), ["stale write accepted"]);
    assert_eq!(c.expected.len(), 1, "the overlap the pause explains");
    assert!(matches!(linear, Linear::Invalid { .. }), "{linear:?}");
}
