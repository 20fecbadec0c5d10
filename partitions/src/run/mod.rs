//! One run: the network and hosts made, the nodes and the register started, the client
//! processes started in their namespaces (workers.rs), the nemesis's schedule played, the
//! history collected and checked. Everything it made is removed when it returns or unwinds
//! (Drop of Net, Node, Workers). What a run is: spec.rs.

pub mod spec;
pub mod workers;

use std::time::{Duration, Instant};

use crate::checkers::common::{Anomaly, Checked};
use crate::checkers::linear::{self, Linear};
use crate::checkers::{election, lock, shared};
use crate::history::{self, mono_ns, Op, Window};
use crate::nemesis::apply::{self, Targets};
use crate::nemesis::fault::moves_clocks;
use crate::run::spec::Spec;
use crate::run::workers::{Setup, Workers};
use crate::topology::clock::Shim;
use crate::topology::net::Net;
use crate::topology::nodes::{Node, NodeConfig};
use crate::topology::{self, Topology};
use crate::workloads::args::Workload;
use crate::workloads::shared::LIMIT;

pub struct Outcome {
    pub t0: u64,
    pub ops: Vec<Op>,
    pub windows: Vec<Window>,
    pub linear: Linear,
    pub checked: Checked,
    pub elapsed: Duration,
    pub problems: Vec<Anomaly>,
}

impl Outcome {
    /// The run's verdict: valid when the register is linearizable and no invariant was broken.
    pub fn valid(&self) -> bool {
        matches!(self.linear, Linear::Valid { .. })
            && self.checked.anomalies.is_empty()
            && self.problems.is_empty()
    }
}

fn host_names(t: Topology, clients: u32) -> Vec<String> {
    let mut names: Vec<String> = (1..=t.data_nodes()).map(|i| format!("n{i}")).collect();
    names.extend((1..=clients).map(|i| format!("c{i}")));
    names.extend(["reg".to_string(), "ctl".to_string()]);
    names
}

pub fn execute(spec: &Spec) -> Result<Outcome, String> {
    let started = Instant::now();
    let names = host_names(spec.topology, spec.clients);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let net = Net::create(&refs)?;
    // Declared before the nodes, so dropped after them: a restart needs the shim until the end.
    let (_shim, node) = node_config(spec)?;
    let mut deployment = topology::deploy(spec.topology, &net, &node)?;
    let register = Node::start(net.host("reg"), NodeConfig::volatile(0))?;
    let state = tempfile::Builder::new()
        .prefix("dlp-state-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let setup = Setup {
        register: &register.url(),
        state_dir: state.path(),
        secs: schedule_secs(spec),
    };
    let mut workers = Workers::start(spec, &net, &deployment, &setup)?;
    let t0 = mono_ns();
    let targets = Targets {
        net: &net,
        nodes: &mut deployment.nodes,
        clients: workers.pids(),
        state_dir: state.path().to_path_buf(),
        stopped: None,
    };
    let windows = nemesis(spec, targets);
    let problems = workers.finish(Duration::from_millis(spec.ttl_ms * 2 + 8_000));
    let ops = history::pair(&workers.events());
    let (linear, checked) = check(spec, &ops, &windows, t0);
    Ok(Outcome {
        t0,
        ops,
        windows,
        linear,
        checked,
        elapsed: started.elapsed(),
        problems,
    })
}

/// The register's linearizability, and the invariants of the run's workload; the election's
/// for every run (they find nothing where nobody campaigned).
fn check(spec: &Spec, ops: &[Op], windows: &[Window], t0: u64) -> (Linear, Checked) {
    let linear = linear::check(ops, Duration::from_secs(60));
    let ttl_ns = spec.ttl_ms * 1_000_000;
    let mut checked = match spec.workload {
        Workload::Mutex | Workload::Election => lock::check(ops, windows, t0, ttl_ns),
        Workload::Shared | Workload::Semaphore => shared::check(ops, windows, t0, ttl_ns, LIMIT),
    };
    election::check(ops, windows, t0, ttl_ns, &mut checked);
    (linear, checked)
}

/// The nodes' configuration, with the compiled clock shim when the run's schedule moves clocks
/// (the shim must outlive the nodes: it is returned to be held).
fn node_config(spec: &Spec) -> Result<(Option<Shim>, NodeConfig), String> {
    let mut node = spec.node.clone();
    if !moves_clocks(&spec.faults) {
        return Ok((None, node));
    }
    let shim = Shim::build()?;
    node.clock_shim = Some(shim.path());
    Ok((Some(shim), node))
}

/// Plays the schedule: quiet, then each fault held and healed, each followed by quiet.
fn nemesis(spec: &Spec, mut targets: Targets) -> Vec<Window> {
    std::thread::sleep(spec.quiet);
    let mut windows = Vec::new();
    for (fault, hold, breaks) in &spec.faults {
        let breaks = breaks.map(str::to_string);
        windows.push(apply::apply(&mut targets, fault, *hold, breaks));
        std::thread::sleep(spec.quiet);
    }
    windows
}

/// The workers' run time: the warm-up, every fault and the quiet after it.
fn schedule_secs(spec: &Spec) -> u64 {
    let faults: Duration = spec
        .faults
        .iter()
        .map(|(_, hold, _)| *hold + spec.quiet)
        .sum();
    (spec.quiet + faults).as_secs().max(1)
}
