//! The seam between the quorum rounds and the network: "send this request to node i, within
//! this time". [`RedisTransport`] talks to real masters and clusters; unit tests script a fake one, so the
//! rounds' decisions (majorities, commit errors, re-asking a node whose reply was lost) are
//! tested deterministically, failures included.

mod ack;
mod cluster;
mod node;
mod redis_nodes;
mod sentinel;
pub(crate) mod slots;

use crate::kind::LockKind;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Value;

use crate::error::NodeFailure;

pub use ack::allowance as ack_allowance;
pub use redis_nodes::RedisTransport;

/// What the rounds ask of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    /// `DLOCK.ACQUIRE resource owner ttl-ms`: token, or nil when held by another owner.
    Acquire {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
        kind: LockKind,
    },
    /// `DLOCK.ACQUIRE resource owner ttl-ms WAIT timeout-ms [TICKET n]`: token, or nil when
    /// the wait ended without a grant. Blocks on the server, so it goes over a dedicated
    /// connection, never the shared one.
    Wait {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
        timeout_ms: u64,
        ticket: Option<u64>,
        kind: LockKind,
    },
    /// `DLOCK.FENCE resource owner token [PX ttl-ms]`: 1 committed, 0 not held.
    Fence {
        resource: &'a str,
        owner: &'a str,
        token: u64,
        ttl_ms: Option<u64>,
    },
    /// `DLOCK.EXTEND resource owner ttl-ms`: 1 extended, 0 not held.
    Extend {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
    },
    /// `DLOCK.RELEASE resource owner`: 1 released, 0 not held.
    Release { resource: &'a str, owner: &'a str },
    /// `DLOCK.STATUS resource`.
    Status { resource: &'a str },
    /// `DLOCK.WAITERS resource`: the waiters in service order (owner, ticket, ms waited).
    Waiters { resource: &'a str },
    /// `DLOCK.TOP CURSOR cursor COUNT count`: one step of a node's hot locks. Names no key: on a
    /// cluster it would reach one master only, so the caller sends it to masters alone.
    Top { cursor: u64, count: u64 },
}

impl<'a> Request<'a> {
    /// The lock this request is about (in a cluster, the key that picks the shard).
    pub fn resource(self) -> &'a str {
        match self {
            Request::Acquire { resource, .. }
            | Request::Wait { resource, .. }
            | Request::Fence { resource, .. }
            | Request::Extend { resource, .. }
            | Request::Release { resource, .. }
            | Request::Status { resource }
            | Request::Waiters { resource } => resource,
            Request::Top { .. } => "",
        }
    }

    /// The Redis command this request is.
    pub fn to_cmd(self) -> redis::Cmd {
        let mut cmd;
        match self {
            Request::Acquire {
                resource,
                owner,
                ttl_ms,
                kind,
            } => {
                cmd = redis::cmd("DLOCK.ACQUIRE");
                cmd.arg(resource).arg(owner).arg(ttl_ms);
                kind.add_args(&mut cmd);
            }
            Request::Wait {
                resource,
                owner,
                ttl_ms,
                timeout_ms,
                ticket,
                kind,
            } => {
                cmd = redis::cmd("DLOCK.ACQUIRE");
                cmd.arg(resource).arg(owner).arg(ttl_ms);
                cmd.arg("WAIT").arg(timeout_ms);
                if let Some(ticket) = ticket {
                    cmd.arg("TICKET").arg(ticket);
                }
                kind.add_args(&mut cmd);
            }
            Request::Fence {
                resource,
                owner,
                token,
                ttl_ms,
            } => {
                cmd = redis::cmd("DLOCK.FENCE");
                cmd.arg(resource).arg(owner).arg(token);
                if let Some(ttl_ms) = ttl_ms {
                    cmd.arg("PX").arg(ttl_ms);
                }
            }
            Request::Extend {
                resource,
                owner,
                ttl_ms,
            } => {
                cmd = redis::cmd("DLOCK.EXTEND");
                cmd.arg(resource).arg(owner).arg(ttl_ms);
            }
            Request::Release { resource, owner } => {
                cmd = redis::cmd("DLOCK.RELEASE");
                cmd.arg(resource).arg(owner);
            }
            Request::Status { resource } => {
                cmd = redis::cmd("DLOCK.STATUS");
                cmd.arg(resource);
            }
            Request::Waiters { resource } => {
                cmd = redis::cmd("DLOCK.WAITERS");
                cmd.arg(resource);
            }
            Request::Top { cursor, count } => {
                cmd = redis::cmd("DLOCK.TOP");
                cmd.arg("CURSOR").arg(cursor).arg("COUNT").arg(count);
            }
        }
        cmd
    }
}

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
}

#[cfg(test)]
pub mod fake;
