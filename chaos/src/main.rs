//! `make chaos` / `make chaos-quick`: five real nodes, K workers taking one lock through
//! dlock-client, a resource server behind a gate (DLOCK.GUARD), and one fault per scenario;
//! scenario 11 runs semaphore holders as processes of this binary (`dlock-chaos holder`,
//! hidden). Exits non-zero if a pass criterion fails (docs/safety/chaos.md).
//!
//! By concern, lowest first (each uses only those before it; tests/architecture.rs checks):
//! `scenario` and `record` (the scenarios as data, what a run records), `checkers` (the record
//! judged), `fixture` (nodes, faults, the slow link, the resource), `workloads` (the clients),
//! `play` (each kind of scenario played), `report`; this file only chooses and loops.

mod checkers;
mod fixture;
mod play;
mod record;
mod report;
mod scenario;
mod workloads;

use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

use checkers::verdict::judge;
use fixture::nodes::build_clock_shim;
use scenario::Fault;
use workloads::holder;

#[derive(Parser)]
#[command(about = "dlock fault-injection safety suite")]
struct Args {
    /// Short run for CI (about 10 s per scenario instead of 60 s).
    #[arg(long)]
    quick: bool,
    /// Run only these scenario numbers (1-11).
    #[arg(long, value_delimiter = ',')]
    only: Vec<u8>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// One of scenario 11's holder processes (started by the suite itself).
    #[command(hide = true)]
    Holder(holder::HolderArgs),
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Some(Command::Holder(holder)) = args.command {
        return holder::main(holder);
    }
    let duration = Duration::from_secs(if args.quick { 8 } else { 60 });
    let shim_dir = tempfile::tempdir().expect("temp dir");
    let shim = build_clock_shim(&shim_dir.path().join("clockshift.so"));
    let mut results = Vec::new();
    let scenarios = scenario::all();
    let count = scenarios.len();
    for sc in scenarios {
        if !args.only.is_empty() && !args.only.contains(&sc.number) {
            continue;
        }
        let started = Instant::now();
        let figures = match sc.fault {
            Fault::ClusterFailover { ack } => play::cluster::run(&sc, duration, ack),
            Fault::StopHolders { limit } => play::semaphore::run(&sc, duration, limit),
            _ => play::lock::run(&sc, duration, shim.clone()),
        };
        let verdict = judge(&sc, &figures);
        let played = (sc, figures, verdict);
        eprintln!(
            "{}",
            report::scenario_line(count, &played, started.elapsed())
        );
        results.push(played);
    }
    report::report(&results)
}
