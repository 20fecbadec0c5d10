//! Helpers the client and CLI tests share: several nodes at once, their URLs, and what one node
//! says of a lock.

use crate::Server;

/// `n` fresh servers with the module.
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
