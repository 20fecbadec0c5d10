//! The shared-lock and semaphore runs (workload_shared.rs, checker_shared.rs): 5 masters with
//! AOF under the survivable faults, each expected valid, and a deliberately broken run of each
//! that must be reported invalid (the checker bites on a real history).

use std::time::Duration;

use crate::faults::Fault;
use crate::run::Spec;
use crate::runs::{aof, hosts};
use crate::topology::Topology;
use crate::worker::Workload;

type Schedule = Vec<(Fault, Duration, Option<&'static str>)>;

/// Partitions, one-way loss, stopped and killed (AOF) nodes, a holder stopped past its lease:
/// the faults a correct configuration survives. `clients` are the client hosts; c1 goes with
/// the minority, the others with the majority.
fn survivable(hold: Duration, ttl: Duration, clients: &[&'static str]) -> Schedule {
    let part = |a: &[&str], b: &[&str]| Fault::Partition {
        a: hosts(a),
        b: hosts(b),
    };
    let rest = clients.get(1..).unwrap_or_default();
    let side = |nodes: &[&'static str]| -> Vec<&'static str> {
        nodes.iter().chain(rest).copied().collect()
    };
    vec![
        (
            part(&["n1", "n2", "c1"], &side(&["n3", "n4", "n5"])),
            hold,
            None,
        ),
        (
            part(&["n1", "c1"], &side(&["n2", "n3", "n4", "n5"])),
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
        (Fault::PauseNodes(vec![0, 1]), ttl * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        (Fault::PauseHolder, ttl * 3, None),
    ]
}

/// The shared and semaphore runs; `quick` shortens the faults and the quiet between them.
pub fn all(quick: bool, ttl: Duration) -> Vec<Spec> {
    let (hold, quiet) = if quick {
        (Duration::from_secs(3), Duration::from_secs(1))
    } else {
        (Duration::from_secs(6), Duration::from_secs(3))
    };
    let spec = |name, about, clients, workload, faults, misbehave: bool| Spec {
        name,
        topology: Topology::Redlock,
        about,
        clients,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 200,
        bypass_gate: false,
        node: aof(),
        faults,
        quiet,
        expect_valid: !misbehave,
        workload,
        misbehave,
        mix: &[],
    };
    let three = ["c1", "c2", "c3"];
    let four = ["c1", "c2", "c3", "c4"];
    vec![
        spec(
            "redlock-shared",
            "5 masters, AOF: a read/write lock, readers read and writers CAS the register through the gate; partitions, one-way loss, SIGSTOP, kill -9",
            3,
            Workload::Shared,
            survivable(hold, ttl, &three),
            false,
        ),
        spec(
            "redlock-semaphore",
            "5 masters, AOF: 4 clients on a 2-permit semaphore (quorum 4 of 5); partitions, one-way loss, SIGSTOP, kill -9",
            4,
            Workload::Semaphore,
            survivable(hold, ttl, &four),
            false,
        ),
        spec(
            "shared-broken",
            "3 clients on a read/write lock whose writers take the shared side (deliberately broken); holders SIGSTOPped past their lease",
            3,
            Workload::Shared,
            vec![(Fault::PauseHolder, ttl * 3, None); 2],
            true,
        ),
        spec(
            "semaphore-broken",
            "4 clients ask the nodes for a 3-permit semaphore while the run checks 2 (deliberately broken); holders SIGSTOPped past their lease",
            4,
            Workload::Semaphore,
            vec![(Fault::PauseHolder, ttl * 3, None); 2],
            true,
        ),
    ]
}
