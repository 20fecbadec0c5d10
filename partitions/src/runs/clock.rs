//! The clock runs: nodes' wall clocks moved through the chaos suite's shim (topology/clock.rs).
//! The module measures leases on the node's wall clock (a grant's deadline is the node's `now` +
//! TTL, `SystemTime`, and the key's PEXPIREAT), so a step forward ends the leases a node holds
//! early, and a step back makes them last longer.

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::{Spec, TTL};
use crate::runs::schedule::pace;

/// Why a jump of several TTLs on a majority breaks an assumption: the leases on those nodes end
/// at once, so a waiter is granted a majority while the holder's validity still runs.
const JUMP: &str =
    "bounded clock drift (a majority's wall clocks step 5 TTLs ahead: their leases end at once)";

/// Steps of 40 ms on one to three nodes, forward and back (the heal steps back). A step forward
/// of `s` ends the leases on that node `s` early. The holder's validity already leaves out the
/// drift allowance (1 % of the TTL + 2 ms: 12 ms at 1 s), and the library gives the lock up at
/// its renew deadline, the renew margin (a tenth of the TTL: 100 ms) before its validity ends:
/// a step below the two together (112 ms) ends no lease under a holder that keeps to its renew
/// deadline. 40 ms exceeds the drift allowance alone on purpose: the margin is what covers it.
fn skew(hold: Duration) -> Schedule {
    let step = |nodes: Vec<usize>, ms| (Fault::ClockOffset { nodes, ms }, hold, None);
    vec![
        step(vec![0, 1], 40),
        step(vec![2, 3], -40),
        // A majority ahead, then (the heal) all of it back at once.
        step(vec![0, 1, 2], 40),
    ]
}

/// n1, n2, n3 jump 5 TTLs ahead while a client holds the lock, and back at the heal.
fn jumps(times: usize, hold: Duration) -> Schedule {
    let ms = i64::try_from(TTL.as_millis() * 5).unwrap_or(i64::MAX);
    let jump = Fault::ClockOffset {
        nodes: vec![0, 1, 2],
        ms,
    };
    vec![(jump, hold, Some(JUMP)); times]
}

/// `redlock-clock-skew` (valid), `redlock-clock-jump` (valid: the overlaps expected, the gate
/// refuses the old holder) and `redlock-clock-jump-broken-gate` (invalid). The nodes get the
/// shim from the run: their schedule moves clocks (`moves_clocks`).
pub fn runs(quick: bool) -> Vec<Spec> {
    let (hold, quiet) = pace(quick, (8, 3));
    let times = if quick { 3 } else { 5 };
    let jump_hold = Duration::from_secs(if quick { 2 } else { 3 });
    let run = |name, about, faults, bypass_gate, expect_valid| Spec {
        bypass_gate,
        expect_valid,
        ..Spec::new(name, about, faults, quiet)
    };
    vec![
        run(
            "redlock-clock-skew",
            "5 masters, AOF: wall clocks stepped +/-40 ms on one to three nodes (within drift + renew margin); guarded register",
            skew(hold),
            false,
            true,
        ),
        run(
            "redlock-clock-jump",
            "5 masters, AOF: a majority's wall clocks jump 5 TTLs ahead while the lock is held; guarded register",
            jumps(times, jump_hold),
            false,
            true,
        ),
        run(
            "redlock-clock-jump-broken-gate",
            "the same jumps, reads and writes bypassing the gate",
            jumps(times, jump_hold),
            true,
            false,
        ),
    ]
}
