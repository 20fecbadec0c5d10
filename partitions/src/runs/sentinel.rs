//! The Sentinel runs: a master and two replicas, the master isolated with one client long
//! enough for the sentinels on the majority side to promote a replica, with and without replica
//! acknowledgement of each grant.

use std::time::Duration;

use crate::nemesis::fault::Schedule;
use crate::run::spec::Spec;
use crate::runs::schedule::partition;
use crate::topology::Topology;

/// The split-brain case: the master isolated with one client (c1) on its side, long enough for
/// the sentinels on the majority side to promote a replica; then healed (the old master
/// rejoins as a replica).
fn split_brain(quick: bool) -> Schedule {
    let hold = Duration::from_secs(if quick { 7 } else { 15 });
    let isolate = partition(&["n1", "c1"], &["n2", "n3", "c2", "c3"]);
    vec![(isolate, hold, None)]
}

/// `sentinel-ack-on` (valid), `sentinel-ack-off` and `sentinel-ack-off-broken-gate` (invalid).
pub fn runs(quick: bool) -> Vec<Spec> {
    let quiet = Duration::from_secs(if quick { 4 } else { 6 });
    let run = |name, about, replicas, bypass_gate, expect_valid| Spec {
        topology: Topology::Sentinel { replicas },
        bypass_gate,
        expect_valid,
        ..Spec::new(name, about, split_brain(quick), quiet)
    };
    vec![
        run(
            "sentinel-ack-on",
            "Sentinel master + 2 replicas, old master isolated with c1; each grant waits for 1 replica (WAIT)",
            1,
            false,
            true,
        ),
        run(
            "sentinel-ack-off",
            "the same isolation without replica acknowledgement: both masters grant (split brain)",
            0,
            false,
            false,
        ),
        run(
            "sentinel-ack-off-broken-gate",
            "split brain without acknowledgement, and reads/writes bypassing the gate",
            0,
            true,
            false,
        ),
    ]
}
