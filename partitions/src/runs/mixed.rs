//! The Python library and the CLI as clients beside the Rust one (c1 Rust, c2 Python, c3 the
//! CLI), on five masters with AOF; and three Python clients with the gate bypassed.

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::{Client, Spec, TTL};
use crate::runs::schedule::{pace, partition, paused_holders};

/// Each non-Rust client cut off on a minority side, then paused past its lease.
fn faults(hold: Duration) -> Schedule {
    vec![
        // Each non-Rust client on a minority side in turn: it must not take the lock there.
        (
            partition(&["n1", "n2", "c3"], &["n3", "n4", "n5", "c1", "c2"]),
            hold,
            None,
        ),
        (
            partition(&["n4", "n5", "c2"], &["n1", "n2", "n3", "c1", "c3"]),
            hold,
            None,
        ),
        // Frozen past the lease inside a critical section, then the CLI client (its whole
        // host: dlock run and its command) whatever it was doing.
        (Fault::PauseHolder, TTL * 3, None),
        (Fault::PauseClient(3), TTL * 3, None),
    ]
}

/// `redlock-mixed-clients` (valid) and `redlock-broken-gate-python` (invalid), at the Redlock
/// runs' pace.
pub fn runs(quick: bool) -> Vec<Spec> {
    let (hold, quiet) = pace(quick, (10, 4));
    const MIX: &[Client] = &[Client::Rust, Client::Python, Client::Cli];
    // Python only: a stopped CLI section races dlock run's SIGTERM on resume (the lock is found
    // lost), so whether its late write lands is chance; the verdict must not be.
    const UNGATED: &[Client] = &[Client::Python; 3];
    vec![
        Spec {
            mix: MIX,
            ..Spec::new(
                "redlock-mixed-clients",
                "5 masters, AOF: c1 Rust, c2 Python, c3 the CLI (dlock run); minority partitions, holders SIGSTOPped past their lease; guarded register",
                faults(hold),
                quiet,
            )
        },
        Spec {
            mix: UNGATED,
            bypass_gate: true,
            expect_valid: false,
            ..Spec::new(
                "redlock-broken-gate-python",
                "5 masters, AOF: three Python clients SIGSTOPped past their lease, reads and writes bypassing the gate",
                paused_holders(3, None),
                quiet,
            )
        },
    ]
}
