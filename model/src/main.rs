//! `make model`: model-checks dlock's quorum fencing and fair waiting with stateright, driving
//! the module's lock rules (`dlock-core`) and the client's acquisition machine
//! (`dlock-client`). Prints one line per run and a closing line; exits non-zero if a property
//! fails on the real design or a mutant goes uncaught.
//!
//! `--deep` raises the bounds (`make model-deep`), `--ci` lowers them (`make test`); `--trace NAME` prints the counterexample a
//! mutant produces, step by step.

mod client;
mod config;
mod deferred;
mod gate;
mod model;
mod node;
mod properties;
mod runs;
mod set_runs;
mod sets;
mod system;
mod trace;

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
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
        property: properties::property,
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
        .map(trace::render);
    let outcome = Outcome {
        states: checker.unique_state_count(),
        failed,
        seconds: started.elapsed().as_secs_f64(),
    };
    (outcome, trace)
}

/// The command line; two variables narrow a run down further (see `after_help`).
#[derive(Parser)]
#[command(
    about = "Model-checks dlock's quorum fencing and fair waiting (docs/protocol.md §6)",
    after_help = "Environment:\n  \
        DLOCK_MODEL_ONLY=TEXT  check only the runs and mutants whose name contains TEXT\n  \
        DLOCK_MODEL_DEPTH=N    explore the design runs up to N steps"
)]
struct Args {
    /// Raise the bounds (`make model-deep`, about fifteen minutes on two cores).
    #[arg(long, conflicts_with = "ci")]
    deep: bool,
    /// Lower the bounds: every run, property and mutant in about a quarter of `make model`'s
    /// time (what `make test` runs).
    #[arg(long)]
    ci: bool,
    /// Print, step by step, the counterexample of each mutant whose name contains NAME.
    #[arg(long, value_name = "NAME")]
    trace: Option<String>,
}

/// What the runs add up to.
struct Tally {
    /// Every design run and every mutant went as expected.
    ok: bool,
    /// States the design runs explored.
    states: usize,
    /// The properties that held in at least one run that checked them.
    holding: BTreeSet<&'static str>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let only = std::env::var("DLOCK_MODEL_ONLY").ok();
    let depth: Option<usize> = std::env::var("DLOCK_MODEL_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok());
    let picked = |run: &Run| only.as_deref().is_none_or(|o| run.config.name.contains(o));
    let mut tally = Tally {
        ok: true,
        states: 0,
        holding: BTreeSet::new(),
    };
    let bounds = if args.deep {
        runs::Bounds::Deep
    } else if args.ci {
        runs::Bounds::Ci
    } else {
        runs::Bounds::Model
    };
    for mut run in runs::design(bounds).into_iter().filter(|r| picked(r)) {
        if depth.is_some() {
            run.config.max_depth = depth;
        }
        check_design(&run, &mut tally);
    }
    let mutants: Vec<Run> = runs::mutants().into_iter().filter(|r| picked(r)).collect();
    let mut caught = 0;
    for run in &mutants {
        if check_mutant(run, args.trace.as_deref()) {
            caught += 1;
        } else {
            tally.ok = false;
        }
    }
    println!(
        "model: {} properties hold over {} states; {caught}/{} mutants caught",
        tally.holding.len(),
        tally.states,
        mutants.len()
    );
    if tally.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Checks one run of the real design and prints its line (and the trace of a property that
/// failed); a property failing that must hold, or holding that must fail, fails the tally.
fn check_design(run: &Run, tally: &mut Tally) {
    let (outcome, _) = check(run);
    tally.states += outcome.states;
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
    let holding = run.checked.iter().filter(|p| !outcome.failed.contains(p));
    tally.holding.extend(holding);
    let verdict = if unexpected.is_empty() && missed.is_empty() {
        "ok"
    } else {
        "FAILED"
    };
    tally.ok &= verdict == "ok";
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
        println!("{}", check_tracing(run, Some(p)).1.unwrap_or_default());
    }
    for p in missed {
        println!("  NOT NOTICED (the run should have broken it): {p}");
    }
}

/// Checks one mutant and prints its line (and its counterexample when `trace` is part of its
/// name); true when the property meant to catch it is the first to fail.
fn check_mutant(run: &Run, trace: Option<&str>) -> bool {
    let (outcome, path) = check(run);
    let name = run.config.name;
    let caught = outcome
        .failed
        .first()
        .filter(|f| run.expected_to_fail.contains(f));
    if let Some(first) = caught {
        println!(
            "mutant: {name}: caught by \"{first}\" after {} states in {:.1}s",
            outcome.states, outcome.seconds
        );
    } else {
        println!("mutant: {name}: NOT CAUGHT over {} states", outcome.states);
    }
    if trace.is_some_and(|t| name.contains(t)) {
        println!("{}", path.unwrap_or_default());
    }
    caught.is_some()
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
