//! The seam between the quorum rounds and the network: "send this request to node i, within
//! this time". [`RedisTransport`] talks to real masters and clusters; unit tests script a fake one, so the
//! rounds' decisions (majorities, commit errors, re-asking a node whose reply was lost) are
//! tested deterministically, failures included.

mod ack;
mod cluster;
mod diagnosis;
mod identity;
mod nodes;
mod sentinel;
mod server;
pub mod slots;
pub(crate) mod urls;

use std::time::Duration;

use futures::future::BoxFuture;
use redis::Value;

use crate::commands::Request;
use crate::errors::NodeFailure;

pub use ack::allowance as ack_allowance;
pub use nodes::RedisTransport;

/// Sends requests to the nodes of one lock manager.
pub trait Transport: Send + Sync + 'static {
    /// How many nodes there are (indices `0..nodes()`).
    fn nodes(&self) -> usize;

    /// How node `node` is named in errors (its URL).
    fn name(&self, node: usize) -> &str;

    /// Sends `request` to node `node`; everything, connecting included, within `timeout`.
    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>>;

    /// Whether any node is a whole Redis Cluster (`redis+cluster://`): a set's keys must then
    /// share a slot per call (docs/multi.md).
    fn is_cluster(&self) -> bool {
        false
    }

    /// Why every acquisition is refused: two nodes turned out to reach one server (it would
    /// count twice towards a quorum). `None` while no such pair was found.
    fn refusal(&self) -> Option<String> {
        None
    }

    /// Waits, at most `within`, until every node's server has been identified once, or a call
    /// of that node ended (identity.rs: a manager's first lock must not beat the check).
    fn meet_all(&self, within: Duration) -> BoxFuture<'_, ()> {
        let _ = within;
        Box::pin(async {})
    }
}

#[cfg(test)]
pub mod fake;
