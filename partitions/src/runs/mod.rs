//! The runs `make partitions` (and, shorter, `make partitions-quick`) play, by family: each run
//! a topology, a workload, a configuration and a schedule of faults, and the verdict it must
//! report. Every family has one entry point, `runs(quick)`; `all` lists them in the order the
//! suite plays them. What the families write their schedules with: schedule.rs.

pub mod clock;
pub mod cluster;
pub mod election;
pub mod mixed;
pub mod redlock;
pub mod schedule;
pub mod sentinel;
pub mod shared;

use crate::run::spec::Spec;

/// Every run; `quick` shortens the faults and the quiet between them (about 2 minutes in all).
pub fn all(quick: bool) -> Vec<Spec> {
    let families: [fn(bool) -> Vec<Spec>; 7] = [
        redlock::runs,
        sentinel::runs,
        mixed::runs,
        election::runs,
        shared::runs,
        cluster::runs,
        clock::runs,
    ];
    families.iter().flat_map(|family| family(quick)).collect()
}
