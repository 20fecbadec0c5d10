//! `make model`: model-checks dlock's quorum fencing and fair waiting with stateright, driving
//! the module's lock rules (`dlock-core`) and the client's acquisition machine
//! (`dlock-client`). Prints one line per run and a closing line; exits non-zero if a property
//! fails on the real design or a mutant goes uncaught.
//!
//! `--deep` raises the bounds (`make model-deep`); `--trace NAME` prints the counterexample a
//! mutant produces, step by step.

mod client;
mod config;
mod model;
mod node;
mod properties;
mod runs;
mod system;
mod trace;

use std::collections::BTreeSet;
use std::time::Instant;

use stateright::{Checker, Model};

pub use model::DlockModel;
use runs::Run;

/// What one run found: states explored, and the properties that failed.
struct Outcome {
    states: usize,
    failed: Vec<&'static str>,
    seconds: f64,
}

fn check(run: &Run) -> (Outcome, Option<String>) {
    check_tracing(run, None)
}

/// As [`check`], with the trace of `property`'s counterexample (else of the first failure).
fn check_tracing(run: &Run, property: Option<&str>) -> (Outcome, Option<String>) {
    let mut checked = run.checked.clone();
    checked.extend(&run.expected_to_fail);
    let model = DlockModel {
        config: run.config.clone(),
        checked,
    };
    let started = Instant::now();
    let mut builder = model.checker().threads(2);
    if run.checked.is_empty() {
        builder = builder.finish_when(stateright::HasDiscoveries::AnyFailures);
    }
    if let Some(depth) = run.config.max_depth {
        builder = builder.target_max_depth(depth);
    }
    // Mutants search breadth-first: their counterexample is then a shortest one.
    if run.checked.is_empty() {
        summarize(builder.spawn_bfs().join(), started, property)
    } else {
        summarize(builder.spawn_dfs().join(), started, property)
    }
}

fn summarize(
    checker: impl Checker<DlockModel>,
    started: Instant,
    property: Option<&str>,
) -> (Outcome, Option<String>) {
    let mut failed: Vec<&'static str> = checker.discoveries().keys().copied().collect();
    failed.sort();
    let wanted = property
        .and_then(|p| failed.iter().find(|f| **f == p))
        .or(failed.first());
    let trace = wanted
        .and_then(|name| checker.discovery(name))
        .map(|path| trace::render(checker.model(), path));
    let outcome = Outcome {
        states: checker.unique_state_count(),
        failed,
        seconds: started.elapsed().as_secs_f64(),
    };
    (outcome, trace)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only = std::env::var("DLOCK_MODEL_ONLY").ok();
    let depth: Option<usize> = std::env::var("DLOCK_MODEL_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok());
    let picked = |run: &Run| only.as_deref().is_none_or(|o| run.config.name.contains(o));
    let deep = args.iter().any(|a| a == "--deep");
    let trace = args
        .iter()
        .position(|a| a == "--trace")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let mut ok = true;
    let (mut states, mut holding) = (0usize, BTreeSet::<&str>::new());
    for mut run in runs::design(deep).into_iter().filter(|r| picked(r)) {
        if depth.is_some() {
            run.config.max_depth = depth;
        }
        let (outcome, _) = check(&run);
        states += outcome.states;
        let unexpected: Vec<_> = outcome
            .failed
            .iter()
            .filter(|p| !run.expected_to_fail.contains(p))
            .collect();
        let missed: Vec<_> = run
            .expected_to_fail
            .iter()
            .filter(|p| !outcome.failed.contains(p))
            .collect();
        holding.extend(run.checked.iter().filter(|p| !outcome.failed.contains(p)));
        let verdict = if unexpected.is_empty() && missed.is_empty() {
            "ok"
        } else {
            "FAILED"
        };
        ok &= verdict == "ok";
        println!(
            "run: {} ({} nodes, {} clients): {} properties hold over {} states in {:.1}s{} -> {verdict}",
            run.config.name,
            run.config.nodes,
            run.config.clients,
            run.checked.len(),
            outcome.states,
            outcome.seconds,
            expected(&run.expected_to_fail, &outcome.failed),
        );
        for p in &unexpected {
            println!("  VIOLATED: {p}");
        }
        if let Some(p) = unexpected.first() {
            println!("{}", check_tracing(&run, Some(p)).1.unwrap_or_default());
        }
        for p in missed {
            println!("  NOT NOTICED (the run should have broken it): {p}");
        }
    }
    let mutants: Vec<Run> = runs::mutants().into_iter().filter(|r| picked(r)).collect();
    let mut caught = 0;
    for run in &mutants {
        let (outcome, path) = check(run);
        let name = run.config.name;
        if let Some(first) = outcome
            .failed
            .first()
            .filter(|f| run.expected_to_fail.contains(f))
        {
            caught += 1;
            println!(
                "mutant: {name}: caught by \"{first}\" after {} states in {:.1}s",
                outcome.states, outcome.seconds
            );
        } else {
            ok = false;
            println!("mutant: {name}: NOT CAUGHT over {} states", outcome.states);
        }
        if trace.as_deref().is_some_and(|t| name.contains(t)) {
            println!("{}", path.unwrap_or_default());
        }
    }
    println!(
        "model: {} properties hold over {states} states; {caught}/{} mutants caught",
        holding.len(),
        mutants.len()
    );
    std::process::exit(if ok { 0 } else { 1 });
}

fn expected(expected: &[&'static str], failed: &[&'static str]) -> String {
    let shown: Vec<&str> = expected
        .iter()
        .filter(|p| failed.contains(p))
        .copied()
        .collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(
            "; as expected without that assumption, a counterexample to \"{}\"",
            shown.join("\", \"")
        )
    }
}
