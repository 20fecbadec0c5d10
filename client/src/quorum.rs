//! The Redlock rounds across all nodes (protocol.md §3–4): parallel fan-out with per-node
//! timeouts, majority counting, validity, and the two-phase quorum fencing commit.

use std::time::{Duration, Instant};

use futures::future::join_all;

use crate::error::{Error, NodeFailure};
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

/// The TTL as the nodes apply it: whole milliseconds, rounded down. Validity is computed from
/// this, never from the finer caller value, or it would claim time the nodes did not grant.
fn whole_ms(ttl: Duration) -> Duration {
    Duration::from_millis(ttl.as_millis() as u64)
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
    let ttl = whole_ms(ttl);
    let started = clock.now();
    let has_validity = || validity(ttl, started, clock.now(), &opts.drift).is_some();
    let cmd = acquire_cmd(resource, owner, ttl);
    let mut votes = join_all(nodes.iter().map(|n| ask(n, &cmd, opts.timeout))).await;
    ask_failed_again(nodes, &cmd, opts, &mut votes).await;

    let round = Round {
        nodes,
        resource,
        owner,
        opts,
    };
    let count = Count::of(votes);
    let result = async {
        let token = majority_token(nodes.len(), &count)?;
        if opts.fencing && nodes.len() > 1 {
            commit(&round, token, &count, has_validity).await?;
        }
        let now = clock.now();
        let left = validity(ttl, started, now, &opts.drift).ok_or(AttemptError::ValidityExpired)?;
        Ok(Granted {
            token,
            valid_until: now + left,
        })
    }
    .await;
    if result.is_err() {
        release(nodes, resource, owner, opts.timeout).await;
    }
    result
}

/// The lock and nodes one attempt is about.
struct Round<'a> {
    nodes: &'a [Node],
    resource: &'a str,
    owner: &'a str,
    opts: &'a RoundOptions,
}

/// What the ACQUIRE votes came to: granting nodes with their tokens, and the nodes that failed.
struct Count {
    grants: Vec<(usize, u64)>,
    failures: Vec<NodeFailure>,
}

impl Count {
    fn of(votes: Vec<Vote>) -> Count {
        let mut count = Count {
            grants: Vec::new(),
            failures: Vec::new(),
        };
        for (i, vote) in votes.into_iter().enumerate() {
            match vote {
                Vote::Granted(token) => count.grants.push((i, token)),
                Vote::Failed(failure) => count.failures.push(failure),
                Vote::Refused => {}
            }
        }
        count
    }
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

/// Phase 1's verdict: the largest granted token if a majority granted, else why not (too few
/// nodes answered at all: no quorum; enough answered but others hold it: contended).
fn majority_token(nodes: usize, count: &Count) -> Result<u64, AttemptError> {
    let needed = quorum(nodes);
    match count.grants.iter().map(|&(_, token)| token).max() {
        Some(top) if count.grants.len() >= needed => Ok(top),
        _ if nodes - count.failures.len() < needed => {
            Err(AttemptError::NoQuorum(count.failures.clone()))
        }
        _ => Err(AttemptError::Contended),
    }
}

/// Phase 2 of quorum fencing, skipped when phase 1 already used up the validity: the nodes would
/// only refuse a commit for a lock that expired there. A refusal caused by expiry is reported as
/// such; otherwise every node that kept us from a majority is named, not only the refusals.
async fn commit(
    round: &Round<'_>,
    token: u64,
    count: &Count,
    has_validity: impl Fn() -> bool,
) -> Result<(), AttemptError> {
    if !has_validity() {
        return Err(AttemptError::ValidityExpired);
    }
    fence(round, token, &count.grants)
        .await
        .map_err(|fence_failures| {
            if !has_validity() {
                return AttemptError::ValidityExpired;
            }
            let mut failures = count.failures.clone();
            failures.extend(fence_failures);
            AttemptError::NoQuorum(failures)
        })
}

/// Commits `token` on the granting nodes; a majority must accept. On failure, the nodes that
/// did not commit and why.
async fn fence(
    round: &Round<'_>,
    token: u64,
    grants: &[(usize, u64)],
) -> Result<(), Vec<NodeFailure>> {
    let mut cmd = redis::cmd("DLOCK.FENCE");
    cmd.arg(round.resource).arg(round.owner).arg(token);
    let refused = "fence refused: lock no longer held";
    let timeout = round.opts.timeout;
    let replies = join_all(
        grants
            .iter()
            .map(|&(i, _)| round.nodes[i].confirm(&cmd, timeout, refused)),
    )
    .await;
    let failures: Vec<NodeFailure> = replies.into_iter().filter_map(Result::err).collect();
    if grants.len() - failures.len() >= quorum(round.nodes.len()) {
        Ok(())
    } else {
        Err(failures)
    }
}

/// What a round sent to every node (RELEASE, EXTEND) found: how many nodes did it, how many
/// answered but refused (not held by this owner), and the ones that could not be reached.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub done: usize,
    pub refused: usize,
    pub unreachable: Vec<NodeFailure>,
}

impl Tally {
    /// Nodes that gave an answer, yes or no.
    pub fn answered(&self) -> usize {
        self.done + self.refused
    }

    /// Too few nodes answered for a majority to be possible: say which and why.
    pub fn no_quorum(self, resource: &str, nodes: usize) -> Error {
        Error::NoQuorum {
            resource: resource.to_string(),
            needed: quorum(nodes),
            failures: self.unreachable,
        }
    }

    /// A failed extension: `NoQuorum` when too few nodes answered to tell, otherwise the lock is
    /// no longer held (or not long enough) on a majority: `LockLost`.
    pub fn extend_error(self, resource: &str, nodes: usize) -> Error {
        if self.answered() < quorum(nodes) {
            return self.no_quorum(resource, nodes);
        }
        Error::LockLost {
            resource: resource.to_string(),
        }
    }
}

/// Sends a command answering 1 (done) or 0 (refused) to every node in parallel.
async fn tally(nodes: &[Node], cmd: &redis::Cmd, timeout: Duration) -> Tally {
    let replies = join_all(nodes.iter().map(|n| n.call::<i64>(cmd, timeout))).await;
    let mut tally = Tally::default();
    for reply in replies {
        match reply {
            Ok(1) => tally.done += 1,
            Ok(_) => tally.refused += 1,
            Err(failure) => tally.unreachable.push(failure),
        }
    }
    tally
}

/// RELEASE on every node in parallel (a grant whose reply was lost is still a grant).
pub async fn release(nodes: &[Node], resource: &str, owner: &str, timeout: Duration) -> Tally {
    let mut cmd = redis::cmd("DLOCK.RELEASE");
    cmd.arg(resource).arg(owner);
    tally(nodes, &cmd, timeout).await
}

/// EXTEND on every node; the new deadline if a majority extended within the new validity,
/// else what each node said.
pub async fn extend(
    nodes: &[Node],
    resource: &str,
    owner: &str,
    ttl: Duration,
    opts: &RoundOptions,
    clock: &dyn Clock,
) -> Result<Instant, Tally> {
    let ttl = whole_ms(ttl);
    let started = clock.now();
    let mut cmd = redis::cmd("DLOCK.EXTEND");
    cmd.arg(resource).arg(owner).arg(ttl.as_millis() as u64);
    let tally = tally(nodes, &cmd, opts.timeout).await;
    let now = clock.now();
    match validity(ttl, started, now, &opts.drift) {
        Some(left) if tally.done >= quorum(nodes.len()) => Ok(now + left),
        _ => Err(tally),
    }
}

#[cfg(test)]
mod tests {
    use super::whole_ms;
    use std::time::Duration;

    #[test]
    fn ttl_is_rounded_down_to_what_the_nodes_apply() {
        assert_eq!(
            whole_ms(Duration::from_micros(10_900)),
            Duration::from_millis(10)
        );
        assert_eq!(whole_ms(Duration::from_secs(3)), Duration::from_secs(3));
    }
}
