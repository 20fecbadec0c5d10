//! The Redlock rounds across all nodes (protocol.md §3–4): parallel fan-out with per-node
//! timeouts, majority counting, validity, and the two-phase quorum fencing commit.

use std::time::{Duration, Instant};

use futures::future::join_all;

use crate::error::NodeFailure;
use crate::node::Node;
use crate::timing::{quorum, validity, Clock, Drift};

/// Settings the rounds need.
#[derive(Debug, Clone)]
pub struct RoundOptions {
    pub timeout: Duration,
    pub drift: Drift,
    pub fencing: bool,
}

/// A successful acquisition.
#[derive(Debug, Clone, Copy)]
pub struct Granted {
    pub token: u64,
    pub valid_until: Instant,
}

/// Why one attempt failed. The caller retries or turns it into an [`crate::Error`].
#[derive(Debug, Clone)]
pub enum AttemptError {
    /// Enough nodes answered, but another owner holds it on some of them.
    Contended,
    /// Too few nodes answered for a majority to be possible.
    NoQuorum(Vec<NodeFailure>),
    ValidityExpired,
}

/// One node's answer to ACQUIRE.
enum Vote {
    Granted(u64),
    Refused,
    Failed(NodeFailure),
}

fn acquire_cmd(resource: &str, owner: &str, ttl: Duration) -> redis::Cmd {
    let mut cmd = redis::cmd("DLOCK.ACQUIRE");
    cmd.arg(resource).arg(owner).arg(ttl.as_millis() as u64);
    cmd
}

async fn ask(node: &Node, cmd: &redis::Cmd, timeout: Duration) -> Vote {
    match node.call::<Option<u64>>(cmd, timeout).await {
        Ok(Some(token)) => Vote::Granted(token),
        Ok(None) => Vote::Refused,
        Err(failure) => Vote::Failed(failure),
    }
}

/// One acquisition attempt on all nodes. On failure everything granted is released.
pub async fn acquire(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    ttl: Duration,
    opts: &RoundOptions,
    clock: &dyn Clock,
) -> Result<Granted, AttemptError> {
    let started = clock.now();
    let cmd = acquire_cmd(resource, owner, ttl);
    let mut votes = join_all(nodes.iter().map(|n| ask(n, &cmd, opts.timeout))).await;
    ask_failed_again(nodes, &cmd, opts, &mut votes).await;

    let grants: Vec<(usize, u64)> = votes
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match v {
            Vote::Granted(token) => Some((i, *token)),
            _ => None,
        })
        .collect();
    let outcome = decide(nodes, resource, owner, opts, &votes, &grants).await;
    let result = outcome.and_then(|token| {
        let left = validity(ttl, started, clock.now(), &opts.drift);
        left.map(|left| Granted {
            token,
            valid_until: clock.now() + left,
        })
        .ok_or(AttemptError::ValidityExpired)
    });
    if result.is_err() {
        release(nodes, resource, owner, opts.timeout).await;
    }
    result
}

/// A node that failed (timeout, dropped connection) may be asked again within the same
/// attempt: ACQUIRE by the same owner is idempotent, so a grant whose reply was lost returns
/// the same token. Only done when it can still change the outcome.
async fn ask_failed_again(
    nodes: &[Node],
    cmd: &redis::Cmd,
    opts: &RoundOptions,
    votes: &mut [Vote],
) {
    let granted = votes
        .iter()
        .filter(|v| matches!(v, Vote::Granted(_)))
        .count();
    let failed: Vec<usize> = (0..votes.len())
        .filter(|&i| matches!(votes[i], Vote::Failed(_)))
        .collect();
    if granted >= quorum(nodes.len()) || granted + failed.len() < quorum(nodes.len()) {
        return;
    }
    let again = join_all(failed.iter().map(|&i| ask(&nodes[i], cmd, opts.timeout))).await;
    for (i, vote) in failed.into_iter().zip(again) {
        votes[i] = vote;
    }
}

/// Turns the votes into the token to return (after fencing, if on) or the reason to fail.
async fn decide(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    opts: &RoundOptions,
    votes: &[Vote],
    grants: &[(usize, u64)],
) -> Result<u64, AttemptError> {
    let needed = quorum(nodes.len());
    if grants.len() < needed {
        let failures: Vec<NodeFailure> = votes
            .iter()
            .filter_map(|v| match v {
                Vote::Failed(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        return Err(if nodes.len() - failures.len() < needed {
            AttemptError::NoQuorum(failures)
        } else {
            AttemptError::Contended
        });
    }
    let top = grants.iter().map(|&(_, token)| token).max().unwrap_or(0);
    if !opts.fencing || nodes.len() == 1 {
        return Ok(top);
    }
    fence(nodes, resource, owner, top, grants, opts)
        .await
        .map(|()| top)
}

/// Phase 2 of quorum fencing: commit `token` on the granting nodes; a majority must accept.
async fn fence(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    token: u64,
    grants: &[(usize, u64)],
    opts: &RoundOptions,
) -> Result<(), AttemptError> {
    let mut cmd = redis::cmd("DLOCK.FENCE");
    cmd.arg(resource).arg(owner).arg(token);
    let refused = "fence refused: lock no longer held";
    let replies = join_all(
        grants
            .iter()
            .map(|&(i, _)| nodes[i].confirm(&cmd, opts.timeout, refused)),
    )
    .await;
    let failures: Vec<NodeFailure> = replies.into_iter().filter_map(Result::err).collect();
    if grants.len() - failures.len() >= quorum(nodes.len()) {
        Ok(())
    } else {
        Err(AttemptError::NoQuorum(failures))
    }
}

/// RELEASE on every node in parallel (a grant whose reply was lost is still a grant).
/// Returns how many nodes answered and how many of them released.
pub async fn release(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    timeout: Duration,
) -> (usize, usize) {
    let mut cmd = redis::cmd("DLOCK.RELEASE");
    cmd.arg(resource).arg(owner);
    let replies = join_all(nodes.iter().map(|n| n.call::<i64>(&cmd, timeout))).await;
    let answered = replies.iter().filter(|r| r.is_ok()).count();
    let released = replies.iter().filter(|r| matches!(r, Ok(1))).count();
    (answered, released)
}

/// EXTEND on every node; the new deadline if a majority extended within the new validity.
pub async fn extend(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    ttl: Duration,
    opts: &RoundOptions,
    clock: &dyn Clock,
) -> Result<Instant, Vec<NodeFailure>> {
    let started = clock.now();
    let mut cmd = redis::cmd("DLOCK.EXTEND");
    cmd.arg(resource).arg(owner).arg(ttl.as_millis() as u64);
    let refused = "not held by this owner";
    let replies = join_all(nodes.iter().map(|n| n.confirm(&cmd, opts.timeout, refused))).await;
    let failures: Vec<NodeFailure> = replies.into_iter().filter_map(Result::err).collect();
    let extended = nodes.len() - failures.len();
    match validity(ttl, started, clock.now(), &opts.drift) {
        Some(left) if extended >= quorum(nodes.len()) => Ok(clock.now() + left),
        _ => Err(failures),
    }
}
