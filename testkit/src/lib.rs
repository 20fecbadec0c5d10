//! Real `redis-server` processes with the freshly built dlock module, for tests, benchmarks and
//! the chaos harness. Each server gets a free loopback port and its own temp dir, and is killed
//! when dropped. Nothing here mocks Redis.

use std::ffi::OsString;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

mod atomic;
mod builder;
mod cluster;
mod error_cases;
mod nodes;
pub use nodes::{nodes, token_on, urls, waiters};
mod sentinel;
mod tls;
pub use atomic::{atomic_migration, AtomicMigration, Ended, Migration};
pub use builder::Builder;
pub use cluster::Cluster;
pub use error_cases::{error_cases, ErrorCase, Setup, PASSWORD};
pub use sentinel::{Sentinels, MASTER_NAME};
pub use tls::{tls_supported, Certificates};

/// Path of the built module: `$DLOCK_MODULE`, else `<workspace>/target/release/libdlock.so`.
pub fn module_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DLOCK_MODULE") {
        return PathBuf::from(p);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = workspace.join("target/release/libdlock.so");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --release -p dlock` (make test does)",
        path.display()
    );
    path.canonicalize().unwrap_or(path)
}

/// The server binary: `$DLOCK_REDIS_SERVER` (what `make compat` sets for each build it tests),
/// else `redis-server` from the PATH.
pub fn server_binary() -> OsString {
    std::env::var_os("DLOCK_REDIS_SERVER").unwrap_or_else(|| "redis-server".into())
}

/// The server's version as (major, minor); Valkey reports the Redis version it is compatible
/// with in `redis_version`, so Valkey 8 reads as 7.2.
pub fn server_version(c: &mut redis::Connection) -> (u32, u32) {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(c)
        .expect("INFO server");
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("0.0.0")
        .trim();
    let mut parts = version.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// A running `redis-server`; killed (SIGKILL) and its dir removed on drop.
pub struct Server {
    builder: Builder,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    exit_status: Option<std::process::ExitStatus>,
}

impl Server {
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A server with the module and default options.
    pub fn start() -> Server {
        Self::builder().start()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A new blocking connection.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .unwrap_or_else(|e| panic!("connect to {}: {e}\n{}", self.url(), self.log_tail()))
    }

    /// The whole server log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// True while the process runs (it may have exited on its own, e.g. after SHUTDOWN).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(status))) => {
                self.exit_status = Some(status);
                self.child = None;
                false
            }
            _ => false,
        }
    }

    /// Waits (bounded) for the process to exit on its own; its status (`None` on timeout).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.is_running() {
                return self.exit_status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Panics if the log shows the server aborting or the module panicking.
    pub fn assert_no_crash(&self) {
        let log = self.log();
        for sign in [
            "ASSERTION FAILED",
            "crashed by signal",
            "Guru Meditation",
            "dlock panicked",
        ] {
            assert!(
                !log.contains(sign),
                "the server log shows {sign:?}:\n{}",
                self.log_tail()
            );
        }
    }

    /// The last lines of the server log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Kills the server and hands over its data dir, for [`Builder::start_in`].
    pub fn into_dir(mut self) -> tempfile::TempDir {
        self.kill();
        let empty = tempfile::tempdir().expect("create temp dir");
        std::mem::replace(&mut self.dir, empty)
    }

    /// SIGKILL, no chance to save: what a crash or power loss looks like.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Clean `SHUTDOWN` (saves if persistence is configured), then waits for the exit.
    pub fn shutdown(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = redis::cmd("SHUTDOWN").exec(&mut self.conn());
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the process again on the same port and dir (after `kill` or `shutdown`).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Starts again with an empty dir: a node that lost all its data.
    pub fn restart_empty(&mut self) {
        self.kill();
        for entry in std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
        self.spawn();
    }

    /// SIGSTOP: the process freezes (a long GC pause, a VM stall).
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// SIGCONT after `pause`.
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        if let Some(pid) = self.pid() {
            let status = Command::new("kill")
                .arg(format!("-{name}"))
                .arg(pid.to_string())
                .status()
                .expect("run kill");
            assert!(status.success(), "kill -{name} {pid} failed");
        }
    }

    fn command(&self) -> Command {
        self.builder.command(self.port, self.dir.path())
    }

    fn spawn(&mut self) {
        if let Err(why) = self.try_spawn() {
            panic!("{why}");
        }
    }

    fn try_spawn(&mut self) -> Result<(), String> {
        let child = self
            .command()
            .spawn()
            .expect("spawn redis-server (is it installed? `make test` installs it)");
        self.child = Some(child);
        self.wait_ready()
    }

    /// Waits until *our* process answers and has loaded its RDB or AOF (INFO answers while
    /// loading, most commands say LOADING). The reply's `process_id` must be our child: another
    /// test's server may hold the port if ours failed to bind it.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                self.exit_status = Some(status);
                return Err(format!(
                    "redis-server on port {} exited with {status}:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            if self.answering_pid() == self.pid() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "redis-server on port {} not ready in 20s:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of whatever redis-server answers on our port, once it is done loading.
    fn answering_pid(&self) -> Option<u32> {
        let mut c = redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .ok()?;
        if !self.builder.is_sentinel() {
            // (A sentinel loads nothing and has no persistence section.)
            let persistence: String = redis::cmd("INFO").arg("persistence").query(&mut c).ok()?;
            if !persistence.lines().any(|line| line.trim() == "loading:0") {
                return None;
            }
        }
        let info: String = redis::cmd("INFO").arg("server").query(&mut c).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|pid| pid.trim().parse().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.resume();
        }
        self.kill();
    }
}
