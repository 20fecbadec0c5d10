//! Real redis-server nodes with the module for the CLI tests: the part of the client tests'
//! helpers (client/tests/common/mod.rs) that the `dlock` binary's tests use.
#![allow(dead_code)]

pub use dlock_testkit::Server;

/// The per-node timeout the tests give `dlock` (`DLOCK_TIMEOUT`): generous, so that on a loaded
/// 2-core machine (parallel builds, other tests' servers) a slow reply is not mistaken for a down
/// node. The client tests use the same (`PATIENT` in client/tests/common/mod.rs).
pub const PATIENT: &str = "500ms";

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

/// How many clients wait for `resource` on `server` (`DLOCK.WAITERS`).
pub fn waiters(server: &Server, resource: &str) -> usize {
    let queue: Vec<redis::Value> = redis::cmd("DLOCK.WAITERS")
        .arg(resource)
        .query(&mut server.conn())
        .expect("DLOCK.WAITERS");
    queue.len()
}
