//! A client process through the Rust library (`dlock-partitions worker`, started by the run
//! inside its own namespace): a single-threaded runtime running the workload it is told
//! (workloads/), its events on stdout.

use std::process::ExitCode;

use crate::workloads::args::{WorkerArgs, Workload};
use crate::workloads::{election, mutex, shared};

pub fn main(args: WorkerArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("worker {}: tokio: {e}", args.id);
            return ExitCode::FAILURE;
        }
    };
    let run = async {
        match args.workload {
            Workload::Mutex => mutex::work(&args).await,
            Workload::Shared | Workload::Semaphore => shared::work(&args).await,
            Workload::Election => election::work(&args).await,
        }
    };
    match runtime.block_on(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worker {}: {e}", args.id);
            ExitCode::FAILURE
        }
    }
}
