//! What a run is: its topology, workload, clients, node configuration, schedule of faults, and
//! the verdict it is documented to give. Every run family (runs/) starts from `Spec::new`, the
//! one place the defaults are written, and changes what it needs.

use std::time::Duration;

use crate::nemesis::fault::Schedule;
use crate::topology::nodes::NodeConfig;
use crate::topology::Topology;
use crate::workloads::args::Workload;

/// The lease every run's clients take; the schedules count their holds and pauses in it.
pub const TTL: Duration = Duration::from_millis(1_000);

/// The library a client process uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `dlock-partitions worker` (worker/rust.rs).
    Rust,
    /// partitions/worker.py with the repository's venv (python/.venv).
    Python,
    /// `dlock run` for each critical section (worker/cli.rs).
    Cli,
}

/// What a run does and what it is expected to show.
pub struct Spec {
    pub name: &'static str,
    pub topology: Topology,
    pub about: &'static str,
    pub clients: u32,
    pub ttl_ms: u64,
    pub hold_ms: u64,
    pub bypass_gate: bool,
    pub workload: Workload,
    pub node: NodeConfig,
    /// Faults in order: each held, then healed, then `quiet` without faults.
    pub faults: Schedule,
    pub quiet: Duration,
    /// The run is meant to be reported valid (a configuration documented as safe).
    pub expect_valid: bool,
    /// Client i (from 1) uses `mix[i - 1]`; clients beyond it (all, when empty) the Rust worker.
    pub mix: &'static [Client],
    /// Workers break the protocol on purpose (workloads/args.rs, `--misbehave`).
    pub misbehave: bool,
}

impl Spec {
    /// A run with the defaults, changed field by field where a run differs
    /// (`Spec { bypass_gate: true, ..Spec::new(..) }`): five masters with AOF, three Rust
    /// clients running the mutex through the gate with a lease of `TTL` and a 200 ms critical
    /// section, expected valid. `faults` are played with `quiet` before and after each.
    pub fn new(name: &'static str, about: &'static str, faults: Schedule, quiet: Duration) -> Spec {
        Spec {
            name,
            topology: Topology::Redlock,
            about,
            clients: 3,
            ttl_ms: TTL.as_millis() as u64,
            hold_ms: 200,
            bypass_gate: false,
            workload: Workload::Mutex,
            node: NodeConfig::aof(),
            faults,
            quiet,
            expect_valid: true,
            mix: &[],
            misbehave: false,
        }
    }

    pub fn client(&self, id: u32) -> Client {
        let i = (id as usize).saturating_sub(1);
        self.mix.get(i).copied().unwrap_or(Client::Rust)
    }
}
