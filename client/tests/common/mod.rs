//! Real redis-server nodes with the module for the client tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use dlock_client::LockManager;
// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use dlock_testkit::{nodes, token_on, urls, waiters, Server};

pub const TTL: Duration = Duration::from_secs(10);

/// Per-node timeout for tests whose subject is not timing: generous, so that on a loaded 2-core
/// machine (parallel builds, other tests' servers) a slow reply is not mistaken for a down node.
/// The tests about timing set the 50 ms default explicitly.
pub const PATIENT: Duration = Duration::from_millis(500);

/// A manager for `servers` with [`PATIENT`] per-node timeouts, other options at their defaults.
pub fn manager(servers: &[Server]) -> LockManager {
    LockManager::builder(urls(servers))
        .timeout(PATIENT)
        .build()
        .expect("valid node URLs")
}

/// Polls `check` for up to 5 s.
pub async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
