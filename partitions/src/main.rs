//! `make partitions` / `make partitions-quick`: Jepsen's method for dlock. Each Redis node, the
//! register's server and each client process runs in its own network namespace on a bridge
//! the suite makes (root); a nemesis partitions, drops, pauses and kills; every operation is
//! recorded and the history checked (linearizability of the guarded register, the lock's
//! invariants). Exits non-zero when a run's verdict is not the one its configuration is
//! documented to give, or when anything the suite made is left behind (docs/safety/partitions.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dlock_partitions::history::Kind;
use dlock_partitions::nemesis::delayer;
use dlock_partitions::report::{chart, document, summary};
use dlock_partitions::run::{self, spec::Spec};
use dlock_partitions::runs;
use dlock_partitions::topology::net;
use dlock_partitions::worker::{self, cli};
use dlock_partitions::workloads::args::WorkerArgs;

#[derive(Parser)]
#[command(about = "dlock under real network partitions, with a checked history")]
struct Args {
    /// The short schedule (about 2 minutes in all).
    #[arg(long)]
    quick: bool,
    /// Only the runs of these names.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Where the JSON reports and the charts go.
    #[arg(long, default_value = "target/partitions")]
    out: PathBuf,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// A client process (started by the suite inside its namespace).
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// A client process through the CLI: `dlock run` for each critical section.
    #[command(hide = true)]
    CliWorker(WorkerArgs),
    /// One critical section, the command `dlock run` starts (the CLI worker's).
    #[command(hide = true)]
    CliSection(cli::SectionArgs),
    /// Holds a host's queued packets (started by the nemesis inside its namespace).
    #[command(hide = true)]
    Delayer(delayer::DelayerArgs),
    /// Removes whatever a crashed run left (namespaces and the processes in them).
    Clean,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.command {
        Some(Command::Worker(w)) => return worker::rust::main(w),
        Some(Command::CliWorker(w)) => return cli::main(w),
        Some(Command::CliSection(s)) => return cli::section_main(s),
        Some(Command::Delayer(d)) => return delayer::main(d),
        Some(Command::Clean) => {
            eprintln!("removed {} namespaces", net::clean_leftovers());
            return ExitCode::SUCCESS;
        }
        None => {}
    }
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("partitions: network namespaces need root");
        return ExitCode::FAILURE;
    }
    let mut failed = 0;
    for spec in runs::all(args.quick) {
        if !args.only.is_empty() && !args.only.iter().any(|n| n == spec.name) {
            continue;
        }
        if !play(&spec, &args.out) {
            failed += 1;
        }
    }
    let left = net::leftovers();
    let dirs = net::leftover_dirs();
    if !left.is_empty() || !dirs.is_empty() {
        eprintln!("partitions: FAILED: left behind: {left:?} {dirs:?}");
        failed += 1;
    }
    eprintln!(
        "partitions: {failed} failed; reports in {}",
        args.out.display()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one spec, writes its report and chart; true if its verdict is the expected one.
fn play(spec: &Spec, out: &std::path::Path) -> bool {
    eprintln!("partitions: {} ...", spec.name);
    let outcome = match run::execute(spec) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("partitions: {}: FAILED to run: {e}", spec.name);
            return false;
        }
    };
    for line in summary::summary(spec, &outcome) {
        eprintln!("{line}");
    }
    let doc = document::document(spec, &outcome);
    if let Err(e) = document::write(out, spec, &doc) {
        eprintln!("partitions: {e}");
    }
    if let Err(e) = document::write_history(out, spec, &outcome.ops) {
        eprintln!("partitions: {e}");
    }
    let verdict = doc["result"].as_str().unwrap_or("?").to_string();
    let png = out.join(format!("{}.png", spec.name));
    if let Err(e) = chart::draw(&png, spec, &outcome, &verdict) {
        eprintln!("partitions: {e}");
    }
    let ok_ops = outcome.ops.iter().filter(|o| o.kind() == Kind::Ok).count();
    if ok_ops == 0 {
        eprintln!("partitions: {}: FAILED: no operation succeeded", spec.name);
        return false;
    }
    outcome.valid() == spec.expect_valid
}
