//! Synthetic histories: each anomaly the shared/semaphore checker knows is found, and a clean
//! history (readers together, permits within the limit, releases before the next writer) is
//! valid.

use super::*;
use crate::history::{pair, Event};

const MS: u64 = 1_000_000;

fn event(process: u32, kind: Kind, f: F, at_ms: u64) -> Event {
    let mut e = Event::new(process, kind, f);
    e.mono_ns = at_ms * MS;
    e
}

/// A hold: asked at `at`, granted 1 ms later for `validity` ms with `token`, released at `rel`.
fn hold(process: u32, role: Role, token: u64, at: u64, rel: u64) -> Vec<Event> {
    let mut invoke = event(process, Kind::Invoke, F::Acquire, at);
    invoke.role = Some(role);
    let mut ok = event(process, Kind::Ok, F::Acquire, at + 1);
    (ok.role, ok.token, ok.validity_ms) = (Some(role), Some(token), Some(1_000));
    vec![
        invoke,
        ok,
        event(process, Kind::Invoke, F::Release, rel),
        event(process, Kind::Ok, F::Release, rel + 1),
    ]
}

fn checked(events: Vec<Vec<Event>>, faults: &[Window]) -> Checked {
    let events: Vec<Event> = events.into_iter().flatten().collect();
    check(&pair(&events), faults, 0, 1_000 * MS, 2)
}

fn kinds(c: &Checked) -> Vec<&'static str> {
    c.anomalies.iter().map(|a| a.kind).collect()
}

#[test]
fn readers_together_then_a_writer_is_valid() {
    let c = checked(
        vec![
            hold(1, Role::Reader, 10, 0, 100),
            hold(2, Role::Reader, 11, 50, 150),
            hold(3, Role::Writer, 12, 160, 300),
            hold(1, Role::Reader, 13, 310, 400),
        ],
        &[],
    );
    assert_eq!(kinds(&c), Vec::<&str>::new());
}

#[test]
fn a_writer_beside_a_reader_is_found() {
    let c = checked(
        vec![
            hold(1, Role::Reader, 10, 0, 200),
            hold(2, Role::Writer, 11, 100, 300),
        ],
        &[],
    );
    assert_eq!(kinds(&c), vec!["writer beside a holder"]);
    assert!(c.anomalies[0].detail.contains("reader process 1"));
}

#[test]
fn two_writers_together_are_found() {
    let c = checked(
        vec![
            hold(1, Role::Writer, 10, 0, 200),
            hold(2, Role::Writer, 11, 100, 300),
        ],
        &[],
    );
    assert_eq!(kinds(&c), vec!["writer beside a holder"]);
}

#[test]
fn a_hold_ends_with_its_validity_when_never_released() {
    let mut late = hold(1, Role::Writer, 10, 0, 5_000);
    late.truncate(2);
    let c = checked(vec![late, hold(2, Role::Writer, 11, 1_500, 1_600)], &[]);
    assert_eq!(kinds(&c), Vec::<&str>::new());
}

#[test]
fn two_permits_are_within_the_limit_three_are_not() {
    let two = checked(
        vec![
            hold(1, Role::Permit, 10, 0, 200),
            hold(2, Role::Permit, 11, 50, 250),
            hold(3, Role::Permit, 9, 210, 300),
        ],
        &[],
    );
    assert_eq!(kinds(&two), Vec::<&str>::new());
    let three = checked(
        vec![
            hold(1, Role::Permit, 10, 0, 200),
            hold(2, Role::Permit, 11, 50, 250),
            hold(3, Role::Permit, 12, 100, 300),
            hold(4, Role::Permit, 13, 120, 300),
        ],
        &[],
    );
    // One excess episode, however many grants it lasted for.
    assert_eq!(kinds(&three), vec!["permits above the limit"]);
    assert!(three.anomalies[0].detail.starts_with("3 permits"));
}

#[test]
fn an_overlap_under_a_broken_assumption_is_expected_not_an_anomaly() {
    let window = Window {
        name: "kill -9 + restart nodes [0, 1, 2]".into(),
        start_ns: 80 * MS,
        end_ns: 90 * MS,
        start_wall_ms: 0,
        breaks: Some("nodes keep their grants".into()),
        skipped: None,
    };
    let c = checked(
        vec![
            hold(1, Role::Reader, 10, 0, 200),
            hold(2, Role::Writer, 11, 100, 300),
        ],
        &[window],
    );
    assert_eq!(kinds(&c), Vec::<&str>::new());
    assert_eq!(c.expected.len(), 1);
}

#[test]
fn a_writer_token_below_an_earlier_reader_is_found() {
    let c = checked(
        vec![
            hold(1, Role::Reader, 20, 0, 100),
            hold(2, Role::Writer, 15, 150, 300),
        ],
        &[],
    );
    assert_eq!(kinds(&c), vec!["token order"]);
}

#[test]
fn permit_tokens_need_no_order() {
    let c = checked(
        vec![
            hold(1, Role::Permit, 20, 0, 100),
            hold(2, Role::Permit, 15, 150, 300),
        ],
        &[],
    );
    assert_eq!(kinds(&c), Vec::<&str>::new());
}

#[test]
fn a_waiter_that_never_returned_is_lost() {
    let mut invoke = event(1, Kind::Invoke, F::Acquire, 0);
    invoke.role = Some(Role::Permit);
    let c = checked(vec![vec![invoke]], &[]);
    assert_eq!(kinds(&c), vec!["lost waiter"]);
}
