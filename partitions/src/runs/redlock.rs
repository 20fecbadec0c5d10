//! The Redlock runs: five masters under the network and process faults a correct configuration
//! must survive, a majority restarted empty (without and with the quarantine), and the gate
//! bypassed while holders are stopped past their lease.

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::{Spec, TTL};
use crate::runs::schedule::{hosts, pace, partition, paused_holders};
use crate::topology::nodes::NodeConfig;

const NODE_HOSTS: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

/// Network and process faults a correct configuration must survive (nothing assumed broken).
fn survivable(hold: Duration) -> Schedule {
    let held = |fault| (fault, hold, None);
    vec![
        held(partition(
            &["n1", "n2", "c1"],
            &["n3", "n4", "n5", "c2", "c3"],
        )),
        held(partition(
            &["n1", "c1"],
            &["n2", "n3", "n4", "n5", "c2", "c3"],
        )),
        // n3 is in neither side: it sees both, the bridge of Jepsen's partitions.
        held(partition(&["n1", "n2", "c1"], &["n4", "n5", "c2", "c3"])),
        held(Fault::OneWay {
            from: hosts(&["c1", "c2"]),
            to: hosts(&["n1", "n2"]),
        }),
        held(Fault::Loss {
            hosts: hosts(&NODE_HOSTS),
            percent: 30,
        }),
        held(Fault::Delay {
            hosts: hosts(&["n1", "n2"]),
            ms: 200,
        }),
        (Fault::PauseNodes(vec![0, 1]), TTL * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        // A client frozen past its lease: its late write must be refused by the gate.
        (Fault::PauseHolder, TTL * 3, None),
    ]
}

/// kill -9 of a majority, restarted at once on empty data: the holder's grants are forgotten.
fn amnesia(times: usize) -> Schedule {
    let crash = (
        Fault::Crash(vec![0, 1, 2]),
        Duration::from_millis(30),
        Some("nodes keep their grants across crashes (no AOF, no quarantine)"),
    );
    vec![crash; times]
}

/// `redlock-partitions`, `redlock-amnesia`, `redlock-amnesia-quarantine` (valid) and
/// `redlock-broken-gate` (invalid).
pub fn runs(quick: bool) -> Vec<Spec> {
    let (hold, quiet) = pace(quick, (10, 4));
    let crashes = if quick { 8 } else { 12 };
    // Nodes that forget: no AOF, and the quarantine given.
    let forgetful = |name, about, quarantine_ms| Spec {
        node: NodeConfig::volatile(quarantine_ms),
        ..Spec::new(name, about, amnesia(crashes), quiet)
    };
    vec![
        Spec::new(
            "redlock-partitions",
            "5 masters, AOF always: partitions, one-way loss, a bridge, loss, delay, SIGSTOP, kill -9; guarded register",
            survivable(hold),
            quiet,
        ),
        forgetful(
            "redlock-amnesia",
            "5 masters without AOF or quarantine, a majority killed and restarted empty; guarded register",
            0,
        ),
        forgetful(
            "redlock-amnesia-quarantine",
            "the same crashes with dlock.quarantine-ms = TTL",
            TTL.as_millis() as u64,
        ),
        Spec {
            bypass_gate: true,
            expect_valid: false,
            ..Spec::new(
                "redlock-broken-gate",
                "5 masters, clients SIGSTOPped past their lease, reads and writes bypassing the gate",
                paused_holders(3, None),
                quiet,
            )
        },
    ]
}
