//! The shared-lock and semaphore runs (workloads/shared.rs, checkers/shared.rs): 5 masters with
//! AOF under the survivable faults, each expected valid, and a deliberately broken run of each
//! that must be reported invalid (the checker bites on a real history).

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::{Spec, TTL};
use crate::runs::schedule::{hosts, pace, partition, paused_holders};
use crate::workloads::args::Workload;

/// Partitions, one-way loss, stopped and killed (AOF) nodes, a holder stopped past its lease:
/// the faults a correct configuration survives. `clients` are the client hosts; c1 goes with
/// the minority, the others with the majority.
fn survivable(hold: Duration, clients: &[&'static str]) -> Schedule {
    let rest = clients.get(1..).unwrap_or_default();
    let side = |nodes: &[&'static str]| -> Vec<&'static str> {
        nodes.iter().chain(rest).copied().collect()
    };
    vec![
        (
            partition(&["n1", "n2", "c1"], &side(&["n3", "n4", "n5"])),
            hold,
            None,
        ),
        (
            partition(&["n1", "c1"], &side(&["n2", "n3", "n4", "n5"])),
            hold,
            None,
        ),
        (
            Fault::OneWay {
                from: hosts(&["c1", "c2"]),
                to: hosts(&["n1", "n2"]),
            },
            hold,
            None,
        ),
        (Fault::PauseNodes(vec![0, 1]), TTL * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        (Fault::PauseHolder, TTL * 3, None),
    ]
}

/// `redlock-shared`, `redlock-semaphore` (valid), `shared-broken` and `semaphore-broken`
/// (invalid: their workers misbehave).
pub fn runs(quick: bool) -> Vec<Spec> {
    let (hold, quiet) = pace(quick, (6, 3));
    let run = |name, about, clients, workload, faults, misbehave: bool| Spec {
        clients,
        expect_valid: !misbehave,
        workload,
        misbehave,
        ..Spec::new(name, about, faults, quiet)
    };
    let three = ["c1", "c2", "c3"];
    let four = ["c1", "c2", "c3", "c4"];
    vec![
        run(
            "redlock-shared",
            "5 masters, AOF: a read/write lock, readers read and writers CAS the register through the gate; partitions, one-way loss, SIGSTOP, kill -9",
            3,
            Workload::Shared,
            survivable(hold, &three),
            false,
        ),
        run(
            "redlock-semaphore",
            "5 masters, AOF: 4 clients on a 2-permit semaphore (quorum 4 of 5); partitions, one-way loss, SIGSTOP, kill -9",
            4,
            Workload::Semaphore,
            survivable(hold, &four),
            false,
        ),
        run(
            "shared-broken",
            "3 clients on a read/write lock whose writers take the shared side (deliberately broken); holders SIGSTOPped past their lease",
            3,
            Workload::Shared,
            paused_holders(2, None),
            true,
        ),
        run(
            "semaphore-broken",
            "4 clients ask the nodes for a 3-permit semaphore while the run checks 2 (deliberately broken); holders SIGSTOPped past their lease",
            4,
            Workload::Semaphore,
            paused_holders(2, None),
            true,
        ),
    ]
}
