//! Real `redis-server` processes, each inside its host's namespace and bound to the host's own
//! address (port 6379 everywhere, as on separate machines). `ip netns exec` execs the server,
//! so the child's pid is the server's: SIGSTOP, SIGCONT and SIGKILL reach it directly.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::topology::clock;
use crate::topology::net::{inside, Host};

pub const PORT: u16 = 6379;

/// How a node runs: persistence and the module's quarantine after a restart.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// AOF with `appendfsync always`: a kill -9 loses no acknowledged grant.
    pub aof: bool,
    /// `dlock.quarantine-ms`: a restarted node refuses grants this long (0: never).
    pub quarantine_ms: u64,
    /// More `--name value` settings (replication, cluster).
    pub extra: Vec<(String, String)>,
    /// The wall-clock shim (clock.rs), preloaded into the server when set; the node's offset
    /// file is in its data dir. Set by the run when its schedule moves clocks.
    pub clock_shim: Option<std::path::PathBuf>,
}

impl NodeConfig {
    /// AOF with `appendfsync always`, no quarantine: a node that keeps what it granted.
    pub fn aof() -> NodeConfig {
        NodeConfig {
            aof: true,
            ..NodeConfig::volatile(0)
        }
    }

    /// No persistence: a restarted node has forgotten its grants; `quarantine_ms` is
    /// `dlock.quarantine-ms` (0: none).
    pub fn volatile(quarantine_ms: u64) -> NodeConfig {
        NodeConfig {
            aof: false,
            quarantine_ms,
            extra: Vec::new(),
            clock_shim: None,
        }
    }
}

pub struct Node {
    pub host: Host,
    config: NodeConfig,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Node {
    /// Starts a node on `host` and waits until it answers PING from the control host.
    pub fn start(host: &Host, config: NodeConfig) -> Result<Node, String> {
        let dir = tempfile::Builder::new()
            .prefix("dlp-redis-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let mut node = Node {
            host: host.clone(),
            config,
            dir,
            child: None,
        };
        if node.config.clock_shim.is_some() {
            clock::set(node.dir.path(), 0)?;
        }
        node.spawn()?;
        Ok(node)
    }

    pub fn url(&self) -> String {
        format!("redis://{}:{PORT}/", self.host.addr)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host.ns]);
        cmd.arg(dlock_testkit::server_binary());
        cmd.args(["--port", &PORT.to_string(), "--bind", &self.host.addr]);
        cmd.arg("--dir").arg(self.dir.path());
        cmd.args(["--logfile", "redis.log", "--daemonize", "no", "--save", ""]);
        cmd.args(["--protected-mode", "no", "--repl-diskless-sync-delay", "0"]);
        let aof = if self.config.aof { "yes" } else { "no" };
        cmd.args(["--appendonly", aof, "--appendfsync", "always"]);
        cmd.arg("--loadmodule").arg(dlock_testkit::module_path());
        cmd.args(["quarantine-ms", &self.config.quarantine_ms.to_string()]);
        for (name, value) in &self.config.extra {
            cmd.arg(format!("--{name}")).arg(value);
        }
        // `ip netns exec` passes its environment on to the server it execs.
        if let Some(shim) = &self.config.clock_shim {
            cmd.env("LD_PRELOAD", shim);
            cmd.env("CLOCKSHIFT_FILE", clock::file(self.dir.path()));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = self
            .command()
            .spawn()
            .map_err(|e| format!("start redis-server on {}: {e}", self.host.name))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if ping(&self.url()) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "redis-server on {} did not answer within 10 s:\n{}",
            self.host.name,
            self.log_tail()
        ))
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn signal(&self, sig: Signal) {
        if let Some(child) = &self.child {
            let _ = kill(Pid::from_raw(child.id() as i32), sig);
        }
    }

    pub fn pause(&self) {
        self.signal(Signal::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// kill -9; the data dir stays (what the AOF kept is what a restart finds).
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same dir (AOF replayed when on).
    pub fn restart(&mut self) -> Result<(), String> {
        self.crash();
        self.spawn()
    }

    /// Moves this node's wall clock to real time + `ms` (it must run with the clock shim).
    pub fn set_clock_offset(&self, ms: i64) -> Result<(), String> {
        if self.config.clock_shim.is_none() {
            return Err(format!("{} runs without the clock shim", self.host.name));
        }
        clock::set(self.dir.path(), ms)
    }

    /// A blocking connection opened from the control host's namespace.
    pub fn conn(&self) -> Result<redis::Connection, String> {
        control_conn(&self.url())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // A stopped server still dies of SIGKILL; the namespace removal would kill it too.
        self.crash();
    }
}

/// The namespace the orchestrator opens its own connections from (never partitioned).
pub const CONTROL: &str = "dlp-ctl";

/// A blocking connection from the control host.
pub fn control_conn(url: &str) -> Result<redis::Connection, String> {
    let url = url.to_string();
    inside(CONTROL, move || {
        redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .map_err(|e| format!("connect to {url}: {e}"))
    })?
}

fn ping(url: &str) -> bool {
    let Ok(mut c) = control_conn(url) else {
        return false;
    };
    redis::cmd("PING").query::<String>(&mut c).is_ok()
}
