//! The runs `make model` (bounded, about four minutes on two cores), its CI share (`--ci`, about
//! a minute, in `make test`) and `make model-deep` make:
//! the real design under each combination of faults and assumptions, and each mutant.

use dlock_core::Want;

use crate::config::{Budget, Config, Crashes, Expiry, Mutant};
use crate::properties::*;

const READ: Want = Want::Shared;
const WRITE: Want = Want::Exclusive;
/// A permit of a semaphore of limit 2: on 3 nodes it needs all 3 (q > 3·2/3).
const PERMIT: Want = Want::Permit { limit: 2 };

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
        gate_restarts: 0,
    }
}

fn run(config: Config, checked: &[&'static str], expected_to_fail: &[&'static str]) -> Run {
    Run {
        config,
        checked: checked.to_vec(),
        expected_to_fail: expected_to_fail.to_vec(),
    }
}

/// How far each run explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bounds {
    /// `make test`'s share (`--ci`): every run and property, 2 steps shallower, the faultless
    /// runs cut at a depth too; about a quarter of the states of `make model`.
    Ci,
    /// `make model`.
    Model,
    /// `make model-deep` (`--deep`): 4 steps deeper, the queued runs exhaustive.
    Deep,
}

impl Bounds {
    /// A fault run explores every behaviour of up to this many steps (`model` in `make model`).
    fn depth(self, model: usize) -> Option<usize> {
        Some(match self {
            Bounds::Ci => model - 2,
            Bounds::Model => model,
            Bounds::Deep => model + 4,
        })
    }

    /// A faultless run: exhaustive, but in CI cut at `ci` steps.
    fn faultless(self, ci: usize) -> Option<usize> {
        (self == Bounds::Ci).then_some(ci)
    }
}

/// How deep `--ci` explores the two faultless runs, which `make model` explores exhaustively.
const FAULTLESS_CI_DEPTH: usize = 20;

/// The real design under `bounds`.
pub fn design(bounds: Bounds) -> Vec<Run> {
    // Faultless runs are exhaustive. Fault runs are not (their state spaces grow without
    // bound in practice): every behaviour of up to `depth` steps is explored, which covers
    // both clients' full acquisitions with the faults interleaved anywhere in them.
    let depth = |model: usize| bounds.depth(model);
    let (n, m) = (3, 2);
    let mut queued = Config::base(
        "no faults, both clients queue behind an earlier holder",
        n,
        m,
    );
    queued.earlier = vec![WRITE];
    queued.max_depth = bounds.faultless(FAULTLESS_CI_DEPTH);
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
    // Its counterexample (a restart that forgets a held grant) takes 14 steps: never shallower.
    amnesia.max_depth = bounds.max(Bounds::Model).depth(14);
    let mut quarantined = amnesia.clone();
    quarantined.name = "restart without state, with quarantine";
    quarantined.crashes = Crashes::LoseState { quarantine: true };
    quarantined.max_depth = depth(14);
    let mut no_faults = Config::base("no faults", n, m);
    no_faults.max_depth = bounds.faultless(FAULTLESS_CI_DEPTH);
    let safety_and_exclusion = [TOKEN_ORDER, NEVER_REVOKED, MUTUAL_EXCLUSION, TICKET_ORDER];
    let mut runs = vec![
        run(no_faults, &ALL, &[]),
        run(queued, &ALL, &[]),
        run(lossy, &safety_and_exclusion, &[]),
        run(crashing, &safety_and_exclusion, &[]),
        run(paused, &SAFETY, &[MUTUAL_EXCLUSION]),
        run(amnesia, &SAFETY, &[MUTUAL_EXCLUSION]),
        run(quarantined, &safety_and_exclusion, &[]),
    ];
    runs.extend(gate_runs(bounds));
    runs.extend(deferred_runs(bounds));
    runs.extend(shared_runs(bounds));
    runs.extend(semaphore_runs(bounds));
    let sets = crate::set_runs::set_runs(|model| bounds.depth(model));
    runs.extend(sets.into_iter().map(|(c, checked)| run(c, &checked, &[])));
    runs
}

/// Holders paused past their leases, each writing once through a gate whose server may restart:
/// two clients can believe they hold at once, and the gate still takes their writes in token
/// order.
fn paused_writers(name: &'static str, nodes: usize) -> Config {
    let mut config = Config::base(name, nodes, 2);
    config.expiry = Expiry::Anytime;
    config.budget = faults(0, 0, 1);
    config.budget.gate_restarts = 1;
    config.gate = true;
    config
}

fn gate_runs(bounds: Bounds) -> Vec<Run> {
    let depth = |model: usize| bounds.depth(model);
    let mut one = paused_writers("gate: holders paused past the TTL write through a gate", 1);
    one.max_depth = depth(18);
    let mut three = paused_writers("gate: holders paused past the TTL write through a gate", 3);
    three.max_depth = depth(16);
    let checked = [NO_STALE_WRITE, TOKEN_ORDER];
    vec![
        run(one, &checked, &[MUTUAL_EXCLUSION]),
        run(three, &checked, &[MUTUAL_EXCLUSION]),
    ]
}

/// Clients that take the lock with one attempt without a wait: held on plain grants, their
/// token committed only when they read it (docs/protocol.md §4.1). Each may release without
/// reading it, or read it (the commit goes out) and then use it.
fn deferred(name: &'static str, no_wait: &[usize]) -> Config {
    let mut config = Config::base(name, 3, 2);
    config.no_wait = no_wait.to_vec();
    config
}

fn deferred_runs(bounds: Bounds) -> Vec<Run> {
    let depth = |model: usize| bounds.depth(model);
    let mut both = deferred("deferred commit: two clients without a wait", &[0, 1]);
    both.max_depth = bounds.faultless(FAULTLESS_CI_DEPTH);
    let mut mixed = deferred(
        "deferred commit: a client without a wait beside a queued one",
        &[0],
    );
    mixed.max_depth = bounds.faultless(FAULTLESS_CI_DEPTH);
    let mut crashing = deferred(
        "deferred commit: crash and restart with state, a duplicate, expiry of idle holders",
        &[0, 1],
    );
    crashing.crashes = Crashes::KeepState;
    crashing.expiry = Expiry::WhenNotHolding;
    crashing.budget = faults(1, 1, 1);
    crashing.max_depth = depth(14);
    let mut amnesia = deferred(
        "deferred commit: restart without state, with quarantine",
        &[0, 1],
    );
    amnesia.crashes = Crashes::LoseState { quarantine: true };
    amnesia.expiry = Expiry::WhenNotHolding;
    amnesia.budget = faults(0, 1, 1);
    amnesia.max_depth = depth(14);
    let mut paused = deferred(
        "deferred commit: holders paused past the TTL write through a gate",
        &[0, 1],
    );
    paused.expiry = Expiry::Anytime;
    paused.budget = faults(0, 0, 1);
    paused.budget.gate_restarts = 1;
    paused.gate = true;
    paused.max_depth = depth(16);
    let exclusion = [TOKEN_ORDER, NEVER_REVOKED, MUTUAL_EXCLUSION];
    vec![
        run(both, &exclusion, &[]),
        run(mixed, &ALL, &[]),
        run(crashing, &exclusion, &[]),
        run(amnesia, &exclusion, &[]),
        run(
            paused,
            &[NO_STALE_WRITE, TOKEN_ORDER, NEVER_REVOKED],
            &[MUTUAL_EXCLUSION],
        ),
    ]
}

/// Read/write locks. Client 0 reads with ticket 30, client 1 writes with 20: when the writer's
/// wait reaches a node first, the later reader queues behind it (writer fairness).
fn shared_runs(bounds: Bounds) -> Vec<Run> {
    let depth = |model: usize| bounds.depth(model);
    let mut behind = Config::asking(
        "shared lock: a reader and a writer behind an earlier reader",
        3,
        &[READ, WRITE],
    );
    behind.earlier = vec![READ];
    behind.max_depth = queued_depth(bounds, 26);
    let mut three = Config::asking(
        "shared lock: two readers and a writer",
        3,
        &[READ, WRITE, READ],
    );
    three.max_depth = depth(14);
    let mut crashing = Config::asking(
        "shared lock: crash and restart with state; expiry of idle holders",
        3,
        &[READ, WRITE],
    );
    crashing.crashes = Crashes::KeepState;
    crashing.expiry = Expiry::WhenNotHolding;
    crashing.budget = faults(0, 1, 1);
    crashing.max_depth = depth(14);
    let mut paused = Config::asking("shared lock: expiry at any moment", 3, &[READ, WRITE]);
    paused.expiry = Expiry::Anytime;
    paused.budget = faults(0, 0, 1);
    paused.max_depth = depth(16);
    let all = [
        TOKEN_ORDER,
        NEVER_REVOKED,
        NO_DEADLOCK,
        SMALLEST_FIRST,
        RW_EXCLUSION,
        TICKET_ORDER,
    ];
    let safety = [TOKEN_ORDER, NEVER_REVOKED, RW_EXCLUSION, TICKET_ORDER];
    vec![
        run(behind, &all, &[]),
        run(three, &safety, &[]),
        run(crashing, &safety, &[]),
        run(paused, &SAFETY, &[RW_EXCLUSION]),
    ]
}

/// The bound of the two largest faultless runs, two clients queued behind earlier holders of a
/// shared lock or a semaphore: exhaustive in `make model-deep`; in `make model` every behaviour
/// of up to `quick` steps, a quarter of their states in a quarter of the time (about 15 s each
/// instead of a minute), every property still checked; in CI 8 steps fewer.
fn queued_depth(bounds: Bounds, quick: usize) -> Option<usize> {
    match bounds {
        Bounds::Deep => None,
        Bounds::Model => Some(quick),
        Bounds::Ci => Some(quick - 8),
    }
}

/// Semaphores of limit 2 on 3 nodes, so a holder needs all 3: three contenders (clients, or
/// earlier holders whose leases end) for two places.
fn semaphore_runs(bounds: Bounds) -> Vec<Run> {
    let depth = |model: usize| bounds.depth(model);
    let mut behind = Config::asking(
        "semaphore: two clients behind two earlier holders",
        3,
        &[PERMIT, PERMIT],
    );
    behind.earlier = vec![PERMIT, PERMIT];
    behind.max_depth = queued_depth(bounds, 28);
    // Three clients that all move do not fit the bounds (a permit takes 7 steps): the last
    // ones start holding on every node instead, and may leave at any moment.
    let three = |name, holding: &[usize]| {
        let mut config = Config::asking(name, 3, &[PERMIT, PERMIT, PERMIT]);
        config.holding_at_start = holding.iter().map(|&c| (c, vec![0, 1, 2])).collect();
        config.max_depth = bounds.faultless(FAULTLESS_CI_DEPTH);
        config
    };
    let mut crashing = three(
        "semaphore: crash and restart with state; expiry of idle holders",
        &[2],
    );
    crashing.crashes = Crashes::KeepState;
    crashing.expiry = Expiry::WhenNotHolding;
    crashing.budget = faults(0, 1, 1);
    crashing.max_depth = depth(14);
    // Two holders paused while their leases end: three expiries free a place on every node.
    let mut paused = three("semaphore: expiry at any moment", &[1, 2]);
    paused.expiry = Expiry::Anytime;
    paused.budget = faults(0, 0, 3);
    paused.max_depth = depth(14);
    let all = [
        NEVER_REVOKED,
        NO_DEADLOCK,
        SMALLEST_FIRST,
        SEMAPHORE_LIMIT,
        TICKET_ORDER,
        NO_LOST_PERMIT,
    ];
    let safety = [NEVER_REVOKED, SEMAPHORE_LIMIT, TICKET_ORDER];
    vec![
        run(behind, &all, &[]),
        run(
            three("semaphore: three clients, one holding from the start", &[2]),
            &all[..5], // no earlier holders: "no lost permit" would repeat "no deadlock"
            &[],
        ),
        run(crashing, &safety, &[]),
        run(paused, &[NEVER_REVOKED, TICKET_ORDER], &[SEMAPHORE_LIMIT]),
    ]
}

/// Each mutant, on the smallest configuration that can show it, with the property that must
/// catch it. The search stops at the first counterexample.
pub fn mutants() -> Vec<Run> {
    Mutant::ALL
        .iter()
        .map(|&mutant| {
            let mut config = Config::base(mutant.name(), 3, 2);
            let catcher = match mutant {
                Mutant::NoCommit => TOKEN_ORDER,
                Mutant::FenceWithoutOwnerCheck => MUTUAL_EXCLUSION,
                Mutant::RevokeCommitted => NEVER_REVOKED,
                Mutant::FifoQueue => {
                    config.earlier = vec![WRITE];
                    TICKET_ORDER
                }
                Mutant::SemaphoreMajority => {
                    // Client 2 already holds on {n0, n2} (a majority): clients 0 and 1 can then
                    // take {n0, n1} and {n1, n2}, and no node has more than two holders.
                    config = Config::asking(mutant.name(), 3, &[PERMIT, PERMIT, PERMIT]);
                    config.holding_at_start = vec![(2, vec![0, 2])];
                    SEMAPHORE_LIMIT
                }
                Mutant::ReaderBesideWriter => {
                    config = Config::asking(mutant.name(), 3, &[WRITE, READ]);
                    RW_EXCLUSION
                }
                Mutant::ExpiredPermitKept => {
                    config = Config::asking(mutant.name(), 3, &[PERMIT, PERMIT]);
                    config.earlier = vec![PERMIT, PERMIT];
                    NO_LOST_PERMIT
                }
                Mutant::UncheckedResource | Mutant::GateOneBelow | Mutant::GateForgetsOnRestart => {
                    config = paused_writers(mutant.name(), 1);
                    NO_STALE_WRITE
                }
                Mutant::UsedBeforeCommit
                | Mutant::ReleaseOvertakesCommit
                | Mutant::CommitToMinority => {
                    config = deferred(mutant.name(), &[0, 1]);
                    TOKEN_ORDER
                }
                Mutant::DeferredTicketedGrant => MUTUAL_EXCLUSION,
                Mutant::PartialSet
                | Mutant::PerKeyOrder
                | Mutant::SkipsQueue
                | Mutant::WoundOneMember => {
                    let catcher;
                    (config, catcher) = crate::set_runs::set_mutant(mutant);
                    catcher
                }
            };
            config.mutant = Some(mutant);
            config.max_depth = Some(24);
            run(config, &[], &[catcher])
        })
        .collect()
}
