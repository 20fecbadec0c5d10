//! The Redlock rounds for one lock (protocol: docs/protocol.md): parallel fan-out with per-node
//! timeouts, majority counting, validity, and the two-phase quorum fencing commit. A [`Round`]
//! carries what acquire, extend and release share; what the replies come to is decided by the
//! pure functions at the bottom, which the unit tests (and the model checker) drive directly.

use std::time::{Duration, Instant};

use futures::future::join_all;
use redis::Value;

use crate::error::{is_wrong_kind, Error, NodeFailure};
use crate::kind::LockKind;
use crate::options::RoundOptions;
use crate::timing::{validity, Clock};
use crate::transport::{Request, Transport};

/// One lock and everything its rounds need.
pub struct Round<'a> {
    pub transport: &'a dyn Transport,
    pub clock: &'a dyn Clock,
    pub opts: &'a RoundOptions,
    pub resource: &'a str,
    pub owner: &'a str,
    pub kind: LockKind,
}

/// A successful acquisition.
#[derive(Debug, Clone, Copy)]
pub struct Granted {
    pub token: u64,
    pub valid_until: Instant,
}

/// Why one attempt failed. The caller retries or turns it into an [`Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptError {
    /// Enough nodes answered, but another owner holds it on some of them.
    Contended,
    /// Too few nodes answered for a majority to be possible.
    NoQuorum(Vec<NodeFailure>),
    /// A node holds the resource as another kind (its message).
    WrongKind(String),
    ValidityExpired,
}

/// One node's answer to ACQUIRE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    Granted(u64),
    Refused,
    Failed(NodeFailure),
}

/// The TTL as the nodes apply it: whole milliseconds, rounded down. Validity is computed from
/// this, never from the finer caller value, or it would claim time the nodes did not grant.
pub fn whole_ms(ttl: Duration) -> Duration {
    Duration::from_millis(ttl.as_millis() as u64)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Round<'_> {
    fn nodes(&self) -> usize {
        self.transport.nodes()
    }

    /// Nodes that make it held (or extended): see [`LockKind::quorum`].
    fn needed(&self) -> usize {
        self.kind.quorum(self.nodes())
    }

    async fn ask(&self, node: usize, request: Request<'_>) -> Result<Value, NodeFailure> {
        self.transport.call(node, request, self.opts.timeout).await
    }

    async fn vote(&self, node: usize, ttl: Duration) -> Vote {
        let request = Request::Acquire {
            resource: self.resource,
            owner: self.owner,
            ttl_ms: ms(ttl),
            kind: self.kind,
        };
        match self.ask(node, request).await {
            Ok(Value::Int(token)) if token > 0 => Vote::Granted(token as u64),
            Ok(Value::Nil) => Vote::Refused,
            Ok(other) => Vote::Failed(self.failure(node, format!("unexpected reply {other:?}"))),
            Err(failure) => Vote::Failed(failure),
        }
    }

    fn failure(&self, node: usize, reason: String) -> NodeFailure {
        NodeFailure {
            node: self.transport.name(node).to_string(),
            reason,
        }
    }

    /// One acquisition attempt on all nodes. On failure everything granted is released.
    pub async fn acquire(&self, ttl: Duration) -> Result<Granted, AttemptError> {
        let ttl = whole_ms(ttl);
        let started = self.clock.now();
        let mut votes = join_all((0..self.nodes()).map(|n| self.vote(n, ttl))).await;
        let again = nodes_worth_asking_again(&votes, self.needed());
        for (node, vote) in again
            .iter()
            .copied()
            .zip(join_all(again.iter().map(|&n| self.vote(n, ttl))).await)
        {
            votes[node] = vote;
        }
        let result = self.conclude(ttl, started, votes).await;
        if result.is_err() {
            self.release().await;
        }
        result
    }

    /// Phase 1's verdict, then (with fencing and more than one node) phase 2, then validity.
    async fn conclude(
        &self,
        ttl: Duration,
        started: Instant,
        votes: Vec<Vote>,
    ) -> Result<Granted, AttemptError> {
        let count = Count::of(votes);
        let token = quorum_token(self.nodes(), self.needed(), &count)?;
        let has_validity = || validity(ttl, started, self.clock.now(), &self.opts.drift).is_some();
        if self.opts.fencing && self.nodes() > 1 {
            if !has_validity() {
                return Err(AttemptError::ValidityExpired);
            }
            let refused = self.fence(token, &count.grants).await;
            commit_verdict(self.needed(), &count, refused, has_validity())?;
        }
        let now = self.clock.now();
        let left =
            validity(ttl, started, now, &self.opts.drift).ok_or(AttemptError::ValidityExpired)?;
        Ok(Granted {
            token,
            valid_until: now + left,
        })
    }

    /// Phase 2: commits `token` on the granting nodes; the nodes that did not commit, and why.
    async fn fence(&self, token: u64, grants: &[(usize, u64)]) -> Vec<NodeFailure> {
        let request = Request::Fence {
            resource: self.resource,
            owner: self.owner,
            token,
            ttl_ms: None,
        };
        let replies = join_all(grants.iter().map(|&(n, _)| self.ask(n, request))).await;
        let mut failures = Vec::new();
        for (&(node, _), reply) in grants.iter().zip(replies) {
            match reply {
                Ok(Value::Int(1)) => {}
                Ok(_) => {
                    failures.push(self.failure(node, "fence refused: lock no longer held".into()))
                }
                Err(failure) => failures.push(failure),
            }
        }
        failures
    }

    /// Sends a request answering 1 (done) or 0 (refused) to every node in parallel.
    async fn tally(&self, request: Request<'_>) -> Tally {
        let replies = join_all((0..self.nodes()).map(|n| self.ask(n, request))).await;
        let mut tally = Tally::default();
        for reply in replies {
            match reply {
                Ok(Value::Int(1)) => tally.done += 1,
                Ok(_) => tally.refused += 1,
                Err(failure) => tally.unreachable.push(failure),
            }
        }
        tally
    }

    /// RELEASE on every node in parallel (a grant whose reply was lost is still a grant).
    pub async fn release(&self) -> Tally {
        self.tally(Request::Release {
            resource: self.resource,
            owner: self.owner,
        })
        .await
    }

    /// EXTEND on every node; the new deadline if a majority extended within the new validity,
    /// else what each node said.
    pub async fn extend(&self, ttl: Duration) -> Result<Instant, Tally> {
        let ttl = whole_ms(ttl);
        let started = self.clock.now();
        let request = Request::Extend {
            resource: self.resource,
            owner: self.owner,
            ttl_ms: ms(ttl),
        };
        let tally = self.tally(request).await;
        let now = self.clock.now();
        match validity(ttl, started, now, &self.opts.drift) {
            Some(left) if tally.done >= self.needed() => Ok(now + left),
            _ => Err(tally),
        }
    }

    pub async fn status(&self) -> Vec<Result<Value, NodeFailure>> {
        join_all((0..self.nodes()).map(|n| {
            self.ask(
                n,
                Request::Status {
                    resource: self.resource,
                },
            )
        }))
        .await
    }
}

/// What the ACQUIRE votes came to: granting nodes with their tokens, and the nodes that failed.
#[derive(Debug, Default)]
pub struct Count {
    pub grants: Vec<(usize, u64)>,
    pub failures: Vec<NodeFailure>,
}

impl Count {
    pub fn of(votes: Vec<Vote>) -> Count {
        let mut count = Count::default();
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

/// Nodes that failed (timeout, dropped connection) and may be asked again within the same
/// attempt — ACQUIRE by the same owner is idempotent, so a grant whose reply was lost returns
/// the same token — but only when that can still change the outcome.
pub fn nodes_worth_asking_again(votes: &[Vote], needed: usize) -> Vec<usize> {
    let granted = votes
        .iter()
        .filter(|v| matches!(v, Vote::Granted(_)))
        .count();
    let failed: Vec<usize> = (0..votes.len())
        .filter(|&i| matches!(votes[i], Vote::Failed(_)))
        .collect();
    if granted >= needed || granted + failed.len() < needed {
        return Vec::new();
    }
    failed
}

/// Phase 1's verdict: the largest granted token if `needed` nodes granted, else why not (too
/// few nodes answered at all: no quorum; enough answered but others hold it: contended).
pub fn quorum_token(nodes: usize, needed: usize, count: &Count) -> Result<u64, AttemptError> {
    match count.grants.iter().map(|&(_, token)| token).max() {
        Some(top) if count.grants.len() >= needed => Ok(top),
        _ if count.failures.iter().any(is_wrong_kind) => {
            let failure = count.failures.iter().find(|f| is_wrong_kind(f));
            Err(AttemptError::WrongKind(
                failure.map(|f| f.reason.clone()).unwrap_or_default(),
            ))
        }
        _ if nodes - count.failures.len() < needed => {
            Err(AttemptError::NoQuorum(count.failures.clone()))
        }
        _ => Err(AttemptError::Contended),
    }
}

/// Phase 2's verdict: a majority of all nodes must have committed. A refusal after validity ran
/// out is reported as expiry; otherwise every node that kept the commit from a majority is
/// named, the ones that failed phase 1 included.
pub fn commit_verdict(
    needed: usize,
    count: &Count,
    refused: Vec<NodeFailure>,
    valid: bool,
) -> Result<(), AttemptError> {
    if count.grants.len() - refused.len() >= needed {
        return Ok(());
    }
    if !valid {
        return Err(AttemptError::ValidityExpired);
    }
    let mut failures = count.failures.clone();
    failures.extend(refused);
    Err(AttemptError::NoQuorum(failures))
}

/// What a round sent to every node (RELEASE, EXTEND) found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

    /// Too few nodes answered for a quorum (`needed`) to be possible: say which and why.
    pub fn no_quorum(self, resource: &str, needed: usize) -> Error {
        Error::NoQuorum {
            resource: resource.to_string(),
            needed,
            failures: self.unreachable,
        }
    }

    /// A failed extension: `NoQuorum` when too few nodes answered to tell, otherwise the lock is
    /// no longer held (or not long enough) on a majority: `LockLost`.
    pub fn extend_error(self, resource: &str, needed: usize) -> Error {
        if self.answered() < needed {
            return self.no_quorum(resource, needed);
        }
        Error::LockLost {
            resource: resource.to_string(),
        }
    }
}

#[cfg(test)]
#[path = "round_tests.rs"]
mod tests;
