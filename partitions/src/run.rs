//! One run: the network and hosts made, the nodes and the register started, the client
//! processes started in their namespaces, the nemesis's schedule played, the history collected
//! and checked. Everything it made is removed when it returns or unwinds (Drop of Net, Node,
//! Workers).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checker::{self, Anomaly};
use crate::faults::{self, Fault, Targets, Window};
use crate::history::{self, mono_ns, Event, Op};
use crate::linear::{self, Linear};
use crate::net::Net;
use crate::nodes::{Node, NodeConfig};
use crate::topology::{self, Topology};
use crate::worker::Workload;
use crate::{checker_shared, workload_shared};

/// The library a client process uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `dlock-partitions worker` (worker.rs).
    Rust,
    /// partitions/worker.py with the repository's venv (python/.venv).
    Python,
    /// `dlock run` for each critical section (worker_cli.rs).
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
    pub workload: crate::worker::Workload,
    pub node: NodeConfig,
    /// Faults in order: each held, then healed, then `quiet` without faults.
    pub faults: Vec<(Fault, Duration, Option<&'static str>)>,
    pub quiet: Duration,
    /// The run is meant to be reported valid (a configuration documented as safe).
    pub expect_valid: bool,
    /// Client i (from 1) uses `mix[i - 1]`; clients beyond it (all, when empty) the Rust worker.
    pub mix: &'static [Client],
    /// Workers break the protocol on purpose (worker.rs, `--misbehave`).
    pub misbehave: bool,
}

impl Spec {
    pub fn client(&self, id: u32) -> Client {
        let i = (id as usize).saturating_sub(1);
        self.mix.get(i).copied().unwrap_or(Client::Rust)
    }
}

pub struct Outcome {
    pub t0: u64,
    pub ops: Vec<Op>,
    pub windows: Vec<Window>,
    pub linear: Linear,
    pub checked: checker::Checked,
    pub elapsed: Duration,
    pub problems: Vec<Anomaly>,
}

/// Client processes; SIGKILLed on drop if still running.
struct Workers {
    children: Vec<Child>,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
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
    let plain = NodeConfig {
        aof: false,
        quarantine_ms: 0,
        extra: Vec::new(),
        clock_shim: None,
    };
    let register = Node::start(net.host("reg"), plain)?;
    let secs = schedule_secs(spec);
    let state = tempfile::Builder::new()
        .prefix("dlp-state-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let workers = start_workers(
        spec,
        &net,
        &deployment,
        (&register.url(), state.path()),
        secs,
    )?;
    let t0 = mono_ns();
    let targets = Targets {
        net: &net,
        nodes: &mut deployment.nodes,
        clients: workers.children.iter().map(Child::id).collect(),
        state_dir: state.path().to_path_buf(),
        stopped: None,
    };
    let windows = nemesis(spec, targets);
    let mut workers = workers;
    let problems = finish(
        &mut workers.children,
        Duration::from_millis(spec.ttl_ms * 2 + 8_000),
    );
    let events = std::mem::take(&mut *lock(&workers.events));
    let ops = history::pair(&events);
    let linear = linear::check(&ops, Duration::from_secs(60));
    let ttl_ns = spec.ttl_ms * 1_000_000;
    let mut checked = match spec.workload {
        Workload::Mutex | Workload::Election => checker::check(&ops, &windows, t0, ttl_ns),
        Workload::Shared | Workload::Semaphore => {
            checker_shared::check(&ops, &windows, t0, ttl_ns, workload_shared::LIMIT)
        }
    };
    crate::checker_election::check(&ops, &windows, t0, ttl_ns, &mut checked);
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

/// The nodes' configuration, with the compiled clock shim when the run's schedule moves clocks
/// (the shim must outlive the nodes: it is returned to be held).
fn node_config(spec: &Spec) -> Result<(Option<crate::clock::Shim>, NodeConfig), String> {
    let mut node = spec.node.clone();
    if !crate::clock::used(&spec.faults) {
        return Ok((None, node));
    }
    let shim = crate::clock::Shim::build()?;
    node.clock_shim = Some(shim.path());
    Ok((Some(shim), node))
}

/// Plays the schedule: quiet, then each fault held and healed, each followed by quiet.
fn nemesis(spec: &Spec, mut targets: Targets) -> Vec<Window> {
    std::thread::sleep(spec.quiet);
    let mut windows = Vec::new();
    for (fault, hold, breaks) in &spec.faults {
        let breaks = breaks.map(str::to_string);
        windows.push(faults::apply(&mut targets, fault, *hold, breaks));
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

fn start_workers(
    spec: &Spec,
    net: &Net,
    deployment: &topology::Deployment,
    (register, state): (&str, &std::path::Path),
    secs: u64,
) -> Result<Workers, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let mut workers = Workers {
        children: Vec::new(),
        events: Arc::default(),
    };
    for id in 1..=spec.clients {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &net.host(&format!("c{id}")).ns]);
        worker_program(&mut cmd, &exe, spec.client(id));
        cmd.args([
            "--id",
            &id.to_string(),
            "--nodes",
            &deployment.urls_for(id).join(";"),
        ]);
        cmd.args(["--replicas", &spec.topology.replicas().to_string()]);
        cmd.args(["--register", register, "--secs", &secs.to_string()]);
        cmd.args(["--ttl-ms", &spec.ttl_ms.to_string()]);
        cmd.arg("--state-dir").arg(state);
        cmd.args(["--hold-ms", &spec.hold_ms.to_string()]);
        if spec.bypass_gate {
            cmd.arg("--bypass-gate");
        }
        // Named only when not the mutex: the Python and CLI workers do the mutex alone.
        if spec.workload != crate::worker::Workload::Mutex {
            if let Some(w) = clap::ValueEnum::to_possible_value(&spec.workload) {
                cmd.args(["--workload", w.get_name()]);
            }
        }
        if spec.misbehave {
            cmd.arg("--misbehave");
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("worker {id}: {e}"))?;
        let out = child.stdout.take().ok_or("worker stdout")?;
        let events = workers.events.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                match serde_json::from_str::<Event>(&line) {
                    Ok(e) => lock(&events).push(e),
                    Err(e) => eprintln!("partitions: a worker printed {line:?}: {e}"),
                }
            }
        });
        workers.children.push(child);
    }
    Ok(workers)
}

/// The repository's root, where the Python worker and the venv `make python-venv` makes are:
/// this crate's parent, as built (a clone runs its own files).
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The program (and subcommand) of a client process; the arguments are the same for all.
fn worker_program(cmd: &mut Command, exe: &std::path::Path, client: Client) {
    match client {
        Client::Rust => cmd.arg(exe).arg("worker"),
        Client::Cli => cmd.arg(exe).arg("cli-worker"),
        Client::Python => {
            // DLOCK_PARTITIONS_PYTHON: another interpreter with the dlock package installed.
            let python = std::env::var("DLOCK_PARTITIONS_PYTHON")
                .unwrap_or_else(|_| format!("{REPO}/python/.venv/bin/python"));
            cmd.arg(python).arg(format!("{REPO}/partitions/worker.py"))
        }
    };
}

/// Waits for the workers to end on their own; one still running after `grace` is killed and
/// reported (its last operation never completed).
fn finish(children: &mut [Child], grace: Duration) -> Vec<Anomaly> {
    let deadline = Instant::now() + grace;
    let mut problems = Vec::new();
    for (i, c) in children.iter_mut().enumerate() {
        loop {
            match c.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => {
                    let _ = c.kill();
                    let _ = c.wait();
                    problems.push(Anomaly {
                        kind: "hung client",
                        at_s: 0.0,
                        detail: format!("client process {} did not end; killed", i + 1),
                    });
                    break;
                }
            }
        }
    }
    // Their output threads end with the pipes; let them drain.
    std::thread::sleep(Duration::from_millis(200));
    problems
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
