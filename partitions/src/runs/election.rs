//! The leader-election runs (workloads/election.rs, checkers/election.rs): the survivable faults
//! on five masters with AOF, which must be reported valid, and the same leader pause with the
//! gate bypassed, which must not.

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::{Spec, TTL};
use crate::runs::schedule::{hosts, pace, partition, paused_holders};
use crate::workloads::args::Workload;

/// Why a leader stopped past its lease breaks an assumption: its loss signal fires only when
/// it runs again, so it still believes it leads while the next leader does. The gate must
/// refuse what it then writes.
const PAUSED: &str =
    "a leader is not stopped past its lease (its loss signal fires when it resumes)";

/// A subset of redlock-partitions' faults (each ~3 s in a quick run), two of them aimed at the
/// leader: the minority side's client cannot win, a leader there loses leadership, the
/// majority elects another.
fn survivable(hold: Duration) -> Schedule {
    vec![
        (
            partition(&["n1", "n2", "c1"], &["n3", "n4", "n5", "c2", "c3"]),
            hold,
            None,
        ),
        // The leader (mid-write) cut off with a minority, then alone with one node: it must
        // hear its loss signal before the majority's next leader is elected.
        (Fault::IsolateHolder(hosts(&["n1", "n2"])), hold, None),
        (Fault::IsolateHolder(hosts(&["n1"])), hold, None),
        (Fault::PauseNodes(vec![0, 1]), TTL * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        // The leader stopped between its read and its write, for 3 leases.
        (Fault::PauseHolder, TTL * 3, Some(PAUSED)),
    ]
}

/// `redlock-election` (valid) and `election-broken-gate` (invalid).
pub fn runs(quick: bool) -> Vec<Spec> {
    let (hold, quiet) = pace(quick, (8, 3));
    let run = |name, about, faults, bypass_gate, expect_valid| Spec {
        hold_ms: 100,
        bypass_gate,
        workload: Workload::Election,
        expect_valid,
        ..Spec::new(name, about, faults, quiet)
    };
    vec![
        run(
            "redlock-election",
            "leader election on 5 masters, AOF always: partitions, SIGSTOP and kill -9 of nodes, the leader stopped past its lease; guarded writes with the epoch",
            survivable(hold),
            false,
            true,
        ),
        run(
            "election-broken-gate",
            "leader election, the leader stopped past its lease, its writes bypassing the gate",
            paused_holders(3, Some(PAUSED)),
            true,
            false,
        ),
    ]
}
