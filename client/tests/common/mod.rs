//! Real redis-server nodes with the module for the client tests.
#![allow(dead_code)]

use std::time::Duration;

use dlock_client::LockManager;
pub use dlock_testkit::Server;

pub fn nodes(n: usize) -> Vec<Server> {
    (0..n).map(|_| Server::start()).collect()
}

pub fn urls(servers: &[Server]) -> Vec<String> {
    servers.iter().map(Server::url).collect()
}

/// `DLOCK.STATUS` token on one node, `None` when free there.
pub fn token_on(server: &Server, resource: &str) -> Option<u64> {
    let reply: Option<Vec<redis::Value>> = redis::cmd("DLOCK.STATUS")
        .arg(resource)
        .query(&mut server.conn())
        .expect("DLOCK.STATUS");
    let fields = reply?;
    Some(redis::from_redis_value_ref(&fields[3]).expect("token"))
}

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

/// How many clients wait for `resource` on `server` (`DLOCK.WAITERS`).
pub fn waiters(server: &Server, resource: &str) -> usize {
    let queue: Vec<redis::Value> = redis::cmd("DLOCK.WAITERS")
        .arg(resource)
        .query(&mut server.conn())
        .expect("DLOCK.WAITERS");
    queue.len()
}
