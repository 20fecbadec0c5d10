//! What a client process is told: which workload it runs and with what parameters, the
//! arguments of `dlock-partitions worker` (and of `cli-worker`, and, spelled the same, of
//! ../worker.py).

/// What the client processes do (docs/safety/partitions.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// One mutex, a guarded compare-and-set of the register inside it.
    #[default]
    Mutex,
    /// A read/write lock: writers as the mutex, readers read the register (shared.rs).
    Shared,
    /// Permits of a 2-permit semaphore, each held then released (shared.rs).
    Semaphore,
    /// Campaign, write as leader with the epoch, resign (election.rs).
    Election,
}

#[derive(clap::Args, Clone, Debug)]
pub struct WorkerArgs {
    #[arg(long)]
    pub id: u32,
    /// The lock's nodes, URLs separated by `;` (a sentinel URL has commas).
    #[arg(long, value_delimiter = ';')]
    pub nodes: Vec<String>,
    #[arg(long)]
    pub register: String,
    #[arg(long)]
    pub ttl_ms: u64,
    /// Time between the read and the write (the critical section).
    #[arg(long)]
    pub hold_ms: u64,
    #[arg(long)]
    pub secs: u64,
    /// Reads and writes bypass the gate (the deliberately broken configuration).
    #[arg(long)]
    pub bypass_gate: bool,
    /// Where to mark being inside a critical section (the nemesis's `PauseHolder` reads it).
    #[arg(long)]
    pub state_dir: std::path::PathBuf,
    /// Replicas each grant must reach (0: no acknowledgement).
    #[arg(long, default_value_t = 0)]
    pub replicas: u32,
    #[arg(long, value_enum, default_value_t = Workload::Mutex)]
    pub workload: Workload,
    /// The deliberately broken configuration: a semaphore's workers ask the nodes for one
    /// permit more than the limit the run checks; a shared lock's writers take the shared side.
    #[arg(long)]
    pub misbehave: bool,
}
