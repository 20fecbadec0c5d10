//! The set runs and the set mutants' configurations (docs/protocol/model-check.md §6.7), which
//! `runs` adds to what `make model` runs: several keys of one node taken all or nothing
//! (crate::sets).

use dlock_core::Want;

use crate::config::{Config, Member, Mutant};
use crate::properties::{ALL_OR_NOTHING, NEVER_REVOKED, SET_EXCLUSION, SET_FAIRNESS, SET_SERVED};

const READ: Want = Want::Shared;
const WRITE: Want = Want::Exclusive;
const A: u8 = 0;
const B: u8 = 1;
const C: u8 = 2;

/// The set runs (docs/protocol/model-check.md §6.7): on one node un-ticketed (ranked by arrival,
/// granted committed: a lone node has no commit round), on three nodes ticketed (30, 20, 10 in
/// client order), wound-wait and FENCEALL included. Fault-free: their point is the queues.
pub fn set_runs(depth: impl Fn(usize) -> Option<usize>) -> Vec<(Config, Vec<&'static str>)> {
    let overlapping: [&[Member]; 3] = [
        &[(A, WRITE), (B, WRITE)],
        &[(B, WRITE), (C, WRITE)],
        &[(B, WRITE)],
    ];
    let opposite: [&[Member]; 3] = [
        &[(A, WRITE), (B, WRITE)],
        &[(B, WRITE), (A, WRITE)],
        &[(B, WRITE)],
    ];
    let readers: [&[Member]; 3] = [
        &[(A, WRITE), (B, READ)],
        &[(B, READ), (C, WRITE)],
        &[(B, WRITE)],
    ];
    let wounded: [&[Member]; 2] = [&[(A, WRITE), (B, WRITE)], &[(A, WRITE)]];
    let runs: [(&'static str, &[&[Member]], usize); 6] = [
        ("sets: {a,b}, {b,c} and a single b", &overlapping, 1),
        (
            "sets: opposite orders {a,b}, {b,a} and a single b",
            &opposite,
            1,
        ),
        (
            "sets: {a,b} and {b,c} reading b, a single writer of b",
            &readers,
            1,
        ),
        ("sets: {a,b}, {b,c} and a single b", &overlapping, 3),
        (
            "sets: opposite orders {a,b}, {b,a} and a single b",
            &opposite,
            3,
        ),
        (
            "sets: a tentative set {a,b} wounded by a single a",
            &wounded,
            3,
        ),
    ];
    runs.into_iter()
        .map(|(name, sets, nodes)| {
            let depth = match (nodes, sets.len()) {
                (1, _) => None, // whole: a few hundred states
                // Whole: 1.8 million states (15 s); 20 steps cover both acquisitions up to
                // the wounded set's next round.
                (_, 2) => depth(20),
                // Three clients' whole search does not fit (11.5 million states at 18 steps): 13
                // steps cover one client's wait and commit (a whole acquisition is 11 steps:
                // start, three waits, three FENCEALLs, the end, three RELEASEALLs) with the
                // others arriving and queueing anywhere in them, a few seconds each.
                _ => depth(13),
            };
            set_run(Config::sets(name, nodes, sets, nodes > 1), depth)
        })
        .collect()
}

/// A set run and the properties it checks: all four of sets, and where tickets wound, that a
/// committed grant is never revoked.
fn set_run(mut config: Config, depth: Option<usize>) -> (Config, Vec<&'static str>) {
    config.max_depth = depth;
    let mut checked = vec![SET_EXCLUSION, ALL_OR_NOTHING, SET_SERVED, SET_FAIRNESS];
    if config.ticketed {
        checked.push(NEVER_REVOKED);
    }
    (config, checked)
}

/// Each set mutant's configuration (one node but for the wound) and the property that must
/// catch it.
pub fn set_mutant(mutant: Mutant) -> (Config, &'static str) {
    let name = mutant.name();
    match mutant {
        // A single holds b: the set's free member a is written.
        Mutant::PartialSet => {
            let sets: [&[Member]; 2] = [&[(B, WRITE)], &[(A, WRITE), (B, WRITE)]];
            (Config::sets(name, 1, &sets, false), ALL_OR_NOTHING)
        }
        // A single holds b; {a,b} and {b,a} queue: placed key by key, each heads one queue.
        Mutant::PerKeyOrder => {
            let sets: [&[Member]; 3] = [
                &[(B, WRITE)],
                &[(A, WRITE), (B, WRITE)],
                &[(B, WRITE), (A, WRITE)],
            ];
            (Config::sets(name, 1, &sets, false), SET_SERVED)
        }
        // A single holds b, {a,b} waits and keeps a idle; {a,c} takes a past it.
        Mutant::SkipsQueue => {
            let sets: [&[Member]; 3] = [
                &[(B, WRITE)],
                &[(A, WRITE), (B, WRITE)],
                &[(A, WRITE), (C, WRITE)],
            ];
            (Config::sets(name, 1, &sets, false), SET_FAIRNESS)
        }
        _ => {
            let sets: [&[Member]; 2] = [&[(A, WRITE), (B, WRITE)], &[(A, WRITE)]];
            (Config::sets(name, 3, &sets, true), ALL_OR_NOTHING)
        }
    }
}
