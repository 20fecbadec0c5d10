//! How a test server is started: its options ([`Builder`]) and its command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{free_port, module_path, server_binary, Server};

/// How to start a server. `Server::builder()` gives the defaults: module loaded, no
/// persistence (`save ""`, `appendonly no`), quarantine 0.
#[derive(Clone, Debug)]
pub struct Builder {
    config: Vec<(String, String)>,
    env: Vec<(OsString, OsString)>,
    wrapper: Vec<OsString>,
    with_module: bool,
    module_args: Vec<String>,
    port: Option<u16>,
    config_file: Option<PathBuf>,
    sentinel: bool,
}

impl Builder {
    /// The defaults of [`Server::builder`].
    pub(crate) fn new() -> Builder {
        Builder {
            config: vec![
                ("save".into(), String::new()),
                ("appendonly".into(), "no".into()),
                // Replicas sync at once instead of after Redis's default 5 s batching delay.
                ("repl-diskless-sync-delay".into(), "0".into()),
            ],
            env: Vec::new(),
            wrapper: Vec::new(),
            with_module: true,
            module_args: Vec::new(),
            port: None,
            config_file: None,
            sentinel: false,
        }
    }

    /// A server of these options on `dir`, not started yet (its own port, or a free one).
    fn unstarted(self, dir: tempfile::TempDir) -> Server {
        Server {
            port: self.port.unwrap_or_else(free_port),
            builder: self,
            dir,
            child: None,
            exit_status: None,
        }
    }

    pub(crate) fn is_sentinel(&self) -> bool {
        self.sentinel
    }

    /// The command line of a server on `port` with its data in `dir`.
    pub(crate) fn command(&self, port: u16, dir: &Path) -> Command {
        let mut argv: Vec<OsString> = self.wrapper.clone();
        argv.push(server_binary());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        if let Some(file) = &self.config_file {
            cmd.arg(file);
        }
        if self.sentinel {
            cmd.arg("--sentinel");
        }
        cmd.arg("--port").arg(port.to_string());
        cmd.arg("--bind").arg("127.0.0.1");
        cmd.arg("--dir").arg(dir);
        cmd.arg("--logfile").arg("redis.log");
        cmd.arg("--daemonize").arg("no");
        if self.with_module {
            cmd.arg("--loadmodule")
                .arg(module_path())
                .args(&self.module_args);
            if !self.module_args.iter().any(|a| a.contains("quarantine")) {
                cmd.arg("--dlock.quarantine-ms").arg("0");
            }
        }
        for (name, value) in &self.config {
            cmd.arg(format!("--{name}")).arg(value);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// Adds `--name value` to the command line (later entries win). Module options
    /// (`dlock.*`) work too, they are applied when the module loads.
    pub fn config(mut self, name: &str, value: &str) -> Self {
        self.config.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets an environment variable of the server process (e.g. for libfaketime).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the server under a wrapper program that execs it (same pid), e.g. `["nice", "-n", "5"]`.
    pub fn wrapper<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, argv: I) -> Self {
        self.wrapper = argv.into_iter().map(Into::into).collect();
        self
    }

    /// A Redis Sentinel (`redis-server CONFIG --sentinel`, no module) with `config_file`, which
    /// it rewrites as it learns the topology.
    pub fn sentinel(mut self, config_file: impl Into<PathBuf>) -> Self {
        self.sentinel = true;
        self.with_module = false;
        self.config_file = Some(config_file.into());
        self
    }

    /// Arguments after the module path on `--loadmodule` (`max-ttl-ms 5000`, ...).
    pub fn module_args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.module_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Starts on an earlier server's data, expecting the server to refuse to start; the
    /// returned server is not running (see [`Server::log`]).
    pub fn start_in_failing(self, dir: tempfile::TempDir) -> Server {
        let mut server = self.unstarted(dir);
        if server.try_spawn().is_ok() {
            panic!(
                "the server started, expected it to refuse:\n{}",
                server.log_tail()
            );
        }
        server
    }

    /// Starts a server that is expected to refuse to start; returns its exit status and log.
    pub fn start_failing(self) -> (std::process::ExitStatus, String) {
        let dir = temp_dir();
        let mut server = self.unstarted(dir);
        match server.try_spawn() {
            Ok(()) => panic!(
                "the server started, expected it to refuse:\n{}",
                server.log_tail()
            ),
            Err(_) => (server.exit_status.expect("exit status"), server.log()),
        }
    }

    /// Starts a plain Redis, without the module (for side-by-side comparisons).
    pub fn without_module(mut self) -> Self {
        self.with_module = false;
        self
    }

    /// Starts from this redis.conf (command-line options still apply on top). The file is
    /// expected to load the module itself, so the builder does not add `--loadmodule`.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self.with_module = false;
        self
    }

    /// Uses a fixed port instead of a free random one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Starts the server in a new temp dir and waits until it answers PING.
    pub fn start(self) -> Server {
        let dir = temp_dir();
        self.start_in(dir)
    }

    /// Starts the server on the data of an earlier one (see [`Server::into_dir`]), e.g. to
    /// restart it with other options.
    pub fn start_in(self, dir: tempfile::TempDir) -> Server {
        let fixed = self.port;
        let mut server = self.unstarted(dir);
        // A free port can be taken by another process between the check and redis binding it;
        // then our server exits and a random port is tried again.
        for _ in 0..5 {
            match server.try_spawn() {
                Ok(()) => return server,
                Err(_) if fixed.is_none() => server.port = free_port(),
                Err(why) => panic!("{why}"),
            }
        }
        server.spawn();
        server
    }
}

/// A fresh temp dir for a server's data, removed with the server.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("dlock-redis-")
        .tempdir()
        .expect("create temp dir")
}
