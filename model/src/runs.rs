//! The runs `make model` (bounded, under two minutes on two cores) and `make model-deep` make:
//! the real design under each combination of faults and assumptions, and each mutant.

use crate::config::{Budget, Config, Crashes, Expiry, Mutant};
use crate::properties::*;

pub struct Run {
    pub config: Config,
    /// Must hold.
    pub checked: Vec<&'static str>,
    /// Must fail: an assumption is broken on purpose, and the check has to notice.
    pub expected_to_fail: Vec<&'static str>,
}

const ALL: [&str; 6] = [
    TOKEN_ORDER,
    NEVER_REVOKED,
    NO_DEADLOCK,
    SMALLEST_FIRST,
    MUTUAL_EXCLUSION,
    TICKET_ORDER,
];
const SAFETY: [&str; 3] = [TOKEN_ORDER, NEVER_REVOKED, TICKET_ORDER];

fn faults(duplicates: u8, crashes: u8, expiries: u8) -> Budget {
    Budget {
        drops: 0,
        duplicates,
        crashes,
        asks_again: 0,
        expiries,
    }
}

fn run(config: Config, checked: &[&'static str], expected_to_fail: &[&'static str]) -> Run {
    Run {
        config,
        checked: checked.to_vec(),
        expected_to_fail: expected_to_fail.to_vec(),
    }
}

/// The real design. `deep` raises the bounds.
pub fn design(deep: bool) -> Vec<Run> {
    // Faultless runs are exhaustive. Fault runs are not (their state spaces grow without
    // bound in practice): every behaviour of up to `depth` steps is explored, which covers
    // both clients' full acquisitions with the faults interleaved anywhere in them.
    let depth = |quick: usize| Some(if deep { quick + 4 } else { quick });
    let (n, m) = (3, 2);
    let mut queued = Config::base(
        "no faults, both clients queue behind an earlier holder",
        n,
        m,
    );
    queued.preheld = true;
    // Losing a request adds no unsafe behaviour (it is a request delayed forever, and every
    // delay is explored), so the safety runs duplicate requests but do not drop them.
    let mut lossy = Config::base("requests duplicated (retried calls)", 3, 2);
    lossy.budget = faults(1, 0, 0);
    lossy.max_depth = depth(16);
    let mut crashing = Config::base("crash and restart with state; expiry of idle holders", 3, 2);
    crashing.crashes = Crashes::KeepState;
    crashing.expiry = Expiry::WhenNotHolding;
    crashing.budget = faults(0, 1, 1);
    crashing.max_depth = depth(14);
    let mut paused = Config::base("expiry at any moment (holders paused past the TTL)", 3, 2);
    paused.expiry = Expiry::Anytime;
    paused.budget = faults(0, 0, 1);
    paused.max_depth = depth(16);
    let mut amnesia = Config::base("restart without state, no quarantine", 3, 2);
    amnesia.crashes = Crashes::LoseState { quarantine: false };
    amnesia.budget = faults(0, 1, 1);
    amnesia.expiry = Expiry::WhenNotHolding;
    amnesia.max_depth = depth(14);
    let mut quarantined = amnesia.clone();
    quarantined.name = "restart without state, with quarantine";
    quarantined.crashes = Crashes::LoseState { quarantine: true };
    let safety_and_exclusion = [TOKEN_ORDER, NEVER_REVOKED, MUTUAL_EXCLUSION, TICKET_ORDER];
    vec![
        run(Config::base("no faults", n, m), &ALL, &[]),
        run(queued, &ALL, &[]),
        run(lossy, &safety_and_exclusion, &[]),
        run(crashing, &safety_and_exclusion, &[]),
        run(paused, &SAFETY, &[MUTUAL_EXCLUSION]),
        run(amnesia, &SAFETY, &[MUTUAL_EXCLUSION]),
        run(quarantined, &safety_and_exclusion, &[]),
    ]
}

/// Each mutant, on the smallest configuration that can show it, with the property that must
/// catch it. The search stops at the first counterexample.
pub fn mutants() -> Vec<Run> {
    Mutant::ALL
        .iter()
        .map(|&mutant| {
            let mut config = Config::base(mutant.name(), 3, 2);
            config.mutant = Some(mutant);
            config.max_depth = Some(24);
            let catcher = match mutant {
                Mutant::NoCommit => TOKEN_ORDER,
                Mutant::FenceWithoutOwnerCheck => MUTUAL_EXCLUSION,
                Mutant::RevokeCommitted => NEVER_REVOKED,
                Mutant::FifoQueue => {
                    config.preheld = true;
                    TICKET_ORDER
                }
            };
            run(config, &[], &[catcher])
        })
        .collect()
}
