//! What the run families write their schedules with: host lists, a partition, the pace of a
//! quick or a full run, and the holders stopped past their lease that every broken-gate run
//! plays.

use std::time::Duration;

use crate::nemesis::fault::{Fault, Schedule};
use crate::run::spec::TTL;

pub fn hosts(v: &[&str]) -> Vec<String> {
    v.iter().map(|h| h.to_string()).collect()
}

/// Neither side reaches the other; hosts on neither side see both.
pub fn partition(a: &[&str], b: &[&str]) -> Fault {
    Fault::Partition {
        a: hosts(a),
        b: hosts(b),
    }
}

/// How long each fault is held and the quiet between them: 3 s and 1 s in a quick run (every
/// run in about 2 minutes), else `full` (seconds).
pub fn pace(quick: bool, full: (u64, u64)) -> (Duration, Duration) {
    let (hold, quiet) = if quick { (3, 1) } else { full };
    (Duration::from_secs(hold), Duration::from_secs(quiet))
}

/// `times` holders, one after another, each stopped (SIGSTOP) inside its critical section for
/// three leases; `breaks` when the run counts that as an assumption broken.
pub fn paused_holders(times: usize, breaks: Option<&'static str>) -> Schedule {
    vec![(Fault::PauseHolder, TTL * 3, breaks); times]
}
