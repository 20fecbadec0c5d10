//! A run's client processes: each started in its host's namespace with the run's arguments
//! (the Rust worker, ../worker.py or the CLI's, as the spec's mix says), its JSON lines
//! collected as they come, and all of them waited for, or killed, when the schedule ends.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checkers::common::Anomaly;
use crate::history::Event;
use crate::run::spec::{Client, Spec};
use crate::topology::net::Net;
use crate::topology::Deployment;
use crate::workloads::args::Workload;

/// What every client process is given besides its id and its nodes.
pub struct Setup<'a> {
    /// The register's URL.
    pub register: &'a str,
    /// Where the processes leave their marks (names.rs).
    pub state_dir: &'a Path,
    /// How long they run.
    pub secs: u64,
}

/// Client processes; SIGKILLed on drop if still running.
pub struct Workers {
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

/// The repository's root, where the Python worker and the venv `make python-venv` makes are:
/// this crate's parent, as built (a clone runs its own files).
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

impl Workers {
    /// Starts client 1 to `spec.clients`, each in its host `c<id>`.
    pub fn start(
        spec: &Spec,
        net: &Net,
        deployment: &Deployment,
        setup: &Setup,
    ) -> Result<Workers, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
        let mut workers = Workers {
            children: Vec::new(),
            events: Arc::default(),
        };
        for id in 1..=spec.clients {
            let mut cmd = command(spec, &exe, &net.host(&format!("c{id}")).ns, id);
            cmd.args(["--nodes", &deployment.urls_for(id).join(";")]);
            arguments(&mut cmd, spec, setup);
            cmd.stdin(Stdio::null()).stdout(Stdio::piped());
            let mut child = cmd.spawn().map_err(|e| format!("worker {id}: {e}"))?;
            let out = child.stdout.take().ok_or("worker stdout")?;
            collect(out, workers.events.clone());
            workers.children.push(child);
        }
        Ok(workers)
    }

    /// Their pids, client 1 first.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// Every event they printed, taken.
    pub fn events(&self) -> Vec<Event> {
        std::mem::take(&mut *lock(&self.events))
    }

    /// Waits for the workers to end on their own; one still running after `grace` is killed
    /// and reported (its last operation never completed).
    pub fn finish(&mut self, grace: Duration) -> Vec<Anomaly> {
        let deadline = Instant::now() + grace;
        let mut problems = Vec::new();
        for (i, c) in self.children.iter_mut().enumerate() {
            if !ended_by(c, deadline) {
                let _ = c.kill();
                let _ = c.wait();
                problems.push(Anomaly {
                    kind: "hung client",
                    at_s: 0.0,
                    detail: format!("client process {} did not end; killed", i + 1),
                });
            }
        }
        // Their output threads end with the pipes; let them drain.
        std::thread::sleep(Duration::from_millis(200));
        problems
    }
}

/// The program (and subcommand) of client `id`, run in namespace `ns`, and its id.
fn command(spec: &Spec, exe: &Path, ns: &str, id: u32) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    match spec.client(id) {
        Client::Rust => cmd.arg(exe).arg("worker"),
        Client::Cli => cmd.arg(exe).arg("cli-worker"),
        Client::Python => {
            // DLOCK_PARTITIONS_PYTHON: another interpreter with the dlock package installed.
            let python = std::env::var("DLOCK_PARTITIONS_PYTHON")
                .unwrap_or_else(|_| format!("{REPO}/python/.venv/bin/python"));
            cmd.arg(python).arg(format!("{REPO}/partitions/worker.py"))
        }
    };
    cmd.args(["--id", &id.to_string()]);
    cmd
}

/// The arguments every client is given alike (workloads/args.rs).
fn arguments(cmd: &mut Command, spec: &Spec, setup: &Setup) {
    cmd.args(["--replicas", &spec.topology.replicas().to_string()]);
    cmd.args([
        "--register",
        setup.register,
        "--secs",
        &setup.secs.to_string(),
    ]);
    cmd.args(["--ttl-ms", &spec.ttl_ms.to_string()]);
    cmd.arg("--state-dir").arg(setup.state_dir);
    cmd.args(["--hold-ms", &spec.hold_ms.to_string()]);
    if spec.bypass_gate {
        cmd.arg("--bypass-gate");
    }
    // Named only when not the mutex: the Python and CLI workers do the mutex alone.
    if spec.workload != Workload::Mutex {
        if let Some(w) = clap::ValueEnum::to_possible_value(&spec.workload) {
            cmd.args(["--workload", w.get_name()]);
        }
    }
    if spec.misbehave {
        cmd.arg("--misbehave");
    }
}

/// Reads a worker's JSON lines into `events` on a thread of its own, until the pipe closes.
fn collect(out: ChildStdout, events: Arc<Mutex<Vec<Event>>>) {
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            match serde_json::from_str::<Event>(&line) {
                Ok(e) => lock(&events).push(e),
                Err(e) => eprintln!("partitions: a worker printed {line:?}: {e}"),
            }
        }
    });
}

/// Whether the process ended by `deadline`.
fn ended_by(c: &mut Child, deadline: Instant) -> bool {
    loop {
        match c.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => return false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
