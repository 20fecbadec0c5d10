//! The names every part of a run agrees on: the keys the client processes lock and write (on the
//! lock's nodes and on the register), and the mark a client leaves while it is inside its
//! critical section, which the nemesis looks for when a fault is aimed at "the holder". The
//! Python worker (../worker.py) spells the same names.

use std::path::{Path, PathBuf};

/// The mutex's and the read/write lock's resource; on a Cluster, the key whose master a fault
/// isolates.
pub const RESOURCE: &str = "dlp:lock";
/// The register every writer's guarded compare-and-set reads and writes.
pub const REGISTER: &str = "dlp:register";
/// The register's gate (`DLOCK.GUARD`, `DLOCK.CHECK`).
pub const GATE: &str = "dlp:gate";
/// The semaphore workload's resource.
pub const SEMAPHORE: &str = "dlp:semaphore";
/// The election workload's election.
pub const ELECTION: &str = "dlp:election";

const HOLDING: &str = "holding-";

/// The file client `id` keeps in the run's state dir while inside its critical section.
pub fn holding_mark(state_dir: &Path, id: u32) -> PathBuf {
    state_dir.join(format!("{HOLDING}{id}"))
}

/// The client a file of the state dir says is inside its critical section, if it is a mark.
pub fn holding_client(file_name: &str) -> Option<u32> {
    file_name.strip_prefix(HOLDING)?.parse().ok()
}
