//! The Redis Cluster runs: 3 masters and 3 replicas, the master serving the lock's slot isolated
//! with one client until its replica is promoted, with and without replica acknowledgement, and
//! with a master too slow to notice it is cut off.

use std::time::Duration;

use crate::names::RESOURCE;
use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::Spec;
use crate::runs::schedule::hosts;
use crate::topology::Topology;

/// Redis Cluster's split brain: the master serving the lock's slot (found when the fault
/// starts) cut off with c1, long enough for the majority to promote its replica (the node
/// timeout, the failure reports' gossip, the election: about 2-3 s); then healed (the old
/// master rejoins as a replica). `slow_ms`: the old master's node timeout raised first.
fn split(quick: bool, slow_ms: Option<u64>) -> Schedule {
    let hold = Duration::from_secs(if quick { 6 } else { 15 });
    let isolate = Fault::IsolateKeyMaster {
        key: RESOURCE.into(),
        with: hosts(&["c1"]),
        slow_ms,
    };
    vec![(isolate, hold, None)]
}

/// `cluster-ack-on`, `cluster-ack-off` (valid) and `cluster-ack-off-slow-master` (invalid).
pub fn runs(quick: bool) -> Vec<Spec> {
    let quiet = Duration::from_secs(if quick { 4 } else { 6 });
    let run = |name, about, replicas, slow_ms, expect_valid| Spec {
        topology: Topology::Cluster { replicas },
        expect_valid,
        ..Spec::new(name, about, split(quick, slow_ms), quiet)
    };
    vec![
        run(
            "cluster-ack-on",
            "Redis Cluster 3+3, the lock's master isolated with c1; each grant waits for 1 replica",
            1,
            None,
            true,
        ),
        run(
            "cluster-ack-off",
            "the same isolation without replica acknowledgement",
            0,
            None,
            true,
        ),
        run(
            "cluster-ack-off-slow-master",
            "no acknowledgement, and the isolated master's cluster-node-timeout longer than the partition",
            0,
            Some(60_000),
            false,
        ),
    ]
}
