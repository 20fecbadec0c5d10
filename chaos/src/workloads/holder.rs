//! `dlock-chaos holder ...` (hidden): one of scenario 11's semaphore holders. It runs as a process
//! of its own so that the harness can really SIGSTOP it, as a GC pause or a VM stall would, and
//! logs every grant and end to its own file, which survives it (checkers/permits.rs reads them).

use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use dlock_client::{ReplicaAck, Resource as LockResource};
use rand::Rng;

use crate::workloads::connect::manager;

/// The semaphore scenario 11's holders share.
pub const SEMAPHORE: &str = "chaos-sem";

#[derive(Args, Debug)]
pub struct HolderArgs {
    /// A node's URL (repeated: every node of the quorum).
    #[arg(long = "node", required = true)]
    pub nodes: Vec<String>,
    /// The semaphore's limit.
    #[arg(long)]
    pub limit: u32,
    /// Each permit's TTL.
    #[arg(long)]
    pub ttl_ms: u64,
    /// Wall-clock time (ms since the epoch) after which no permit is asked for.
    #[arg(long)]
    pub until_ms: u64,
    /// Where grants and ends are logged, one line each.
    #[arg(long)]
    pub log: PathBuf,
}

pub fn main(args: HolderArgs) -> ExitCode {
    let opened = OpenOptions::new().create(true).append(true).open(&args.log);
    let log = match opened {
        Ok(file) => LineWriter::new(file),
        Err(e) => {
            eprintln!("holder: cannot open {}: {e}", args.log.display());
            return ExitCode::FAILURE;
        }
    };
    // One thread: the holder is one client, and the machine's two cores are shared.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(hold_until(&args, log)),
        Err(e) => {
            eprintln!("holder: cannot start a runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Takes a permit, logs it, holds 50-150 ms, logs the end, releases; until `until_ms`.
async fn hold_until(args: &HolderArgs, mut log: LineWriter<File>) -> ExitCode {
    let manager = manager(&args.nodes, ReplicaAck::default());
    let semaphore = LockResource::semaphore(SEMAPHORE, args.limit);
    let ttl = Duration::from_millis(args.ttl_ms);
    while wall_ms() < args.until_ms {
        let Ok(guard) = manager.lock(semaphore, ttl, Duration::from_secs(1)).await else {
            // No quorum while a node restarts: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        // The wall clock first: a stop between the two reads then shortens the logged lease
        // (validity keeps running down) instead of lengthening it past the real one.
        let granted = wall_ms();
        let valid_end = granted + millis(guard.validity());
        // A commit that fails is a lock lost before its token was used: nothing to log.
        let Ok(token) = guard.token().await else {
            continue;
        };
        if logged(&mut log, &format!("grant {token} {granted} {valid_end}\n")).is_err() {
            return ExitCode::FAILURE;
        }
        let hold = rand::rng().random_range(50..=150);
        tokio::time::sleep(Duration::from_millis(hold)).await;
        // Written before the release: the next holder cannot be let in before this line.
        if logged(&mut log, &format!("end {token} {}\n", wall_ms())).is_err() {
            return ExitCode::FAILURE;
        }
        let _ = guard.release().await; // a lapsed permit's release finds nothing: fine
    }
    ExitCode::SUCCESS
}

fn logged(log: &mut LineWriter<File>, line: &str) -> std::io::Result<()> {
    let written = log.write_all(line.as_bytes()).and_then(|()| log.flush());
    if let Err(e) = &written {
        eprintln!("holder: cannot write its log: {e}");
    }
    written
}

/// Milliseconds since the epoch: the clock all holder processes and the check share.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
