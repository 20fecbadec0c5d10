//! Real redis-server nodes with the module for the CLI tests (the node helpers are testkit's,
//! shared with the client tests).
#![allow(dead_code)]

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use dlock_testkit::{nodes, token_on, urls, waiters, Server};

/// The per-node timeout the tests give `dlock` (`DLOCK_TIMEOUT`): generous, so that on a loaded
/// 2-core machine (parallel builds, other tests' servers) a slow reply is not mistaken for a down
/// node. The client tests use the same (`PATIENT` in client/tests/common/mod.rs).
pub const PATIENT: &str = "500ms";

/// Runs `dlock ARGS` against `servers` (stdin closed) and collects what it printed.
pub fn dlock(servers: &[Server], args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", urls(servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run dlock")
}

/// `dlock ARGS` started in the background against `servers` (stdin closed, stdout piped).
pub fn spawn(servers: &[Server], args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", urls(servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn dlock")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}
