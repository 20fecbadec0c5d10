//! `lock()` in queue mode: the waiting happens on the nodes (`DLOCK.ACQUIRE ... WAIT ...
//! TICKET`, docs/protocol.md §5), driven by the pure acquisition machine of `acquisition.rs`,
//! the one the model checker explores.
//!
//! - One ticket per `lock()` call, from the wall clock in µs: it orders waiters across nodes and
//!   clients, oldest first. With one node no ticket is sent: FIFO is the order, and a grant that
//!   is never committed must not be revocable.
//! - Round `r` waits as owner `<base>:<r>`, so a late RELEASE of an abandoned round cannot free
//!   the next one.
//! - Waiting does not eat the lease: the commit (`FENCE ... PX ttl`) sets the TTL afresh and
//!   validity counts from when it was sent. A round whose validity is gone once it committed is
//!   given up (protocol.md §6.6, finding 1).
//! - When no majority is possible (nodes down) or validity ran out, everything of that attempt
//!   is released and a new one starts after the retry pause, same ticket, new base owner, until
//!   the deadline: nodes that were down are asked again.
//! - At the deadline, or when the caller drops `lock()` midway, the round is withdrawn
//!   everywhere (RELEASE of its owner, in the background, so the caller gets its answer on time):
//!   no wait and no uncommitted grant is left behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::future::{join_all, BoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use redis::Value;
use tokio_util::sync::CancellationToken;

use crate::acquisition::{Acquisition, Event};
use crate::error::{is_wrong_kind, NodeFailure};
use crate::kind::{LockKind, Resource};
use crate::probe::WaitProbe;
use crate::round::{whole_ms, AttemptError, Granted};
use crate::shared::{new_owner, Shared};
use crate::timing::validity;
use crate::transport::Request;

/// A lock won in queue mode: the owner it is held under and its grant.
pub struct Acquired {
    pub owner: String,
    pub granted: Granted,
    /// To be cancelled when the holder releases: waits still out are then stale.
    pub released: CancellationToken,
}

/// One `lock()` call in queue mode.
pub struct QueueWait {
    shared: Arc<Shared>,
    resource: String,
    kind: LockKind,
    ttl: Duration,
    ticket: Option<u64>,
    deadline: Instant,
    /// Told the owner of each round as it starts waiting.
    pub probe: Option<WaitProbe>,
}

type Reply = (Event, Option<Why>);

impl QueueWait {
    pub fn new(
        shared: Arc<Shared>,
        resource: Resource<'_>,
        ttl: Duration,
        deadline: Instant,
    ) -> Self {
        let ticket = (shared.nodes() > 1).then(draw_ticket);
        QueueWait {
            shared,
            resource: resource.name.to_string(),
            kind: resource.kind,
            ttl: whole_ms(ttl),
            ticket,
            deadline,
            probe: None,
        }
    }

    /// Waits until held or the deadline; on failure, why and how many attempts were made.
    pub async fn acquire(self: &Arc<Self>) -> Result<Acquired, (AttemptError, u32)> {
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            let failure = match self.attempt(&new_owner()).await {
                Ok(acquired) => return Ok(acquired),
                Err(failure @ (AttemptError::Contended | AttemptError::WrongKind(_))) => {
                    return Err((failure, attempts))
                }
                Err(failure) => failure,
            };
            let pause = self.shared.retry_pause();
            let out_of_time = self.shared.clock.now() + pause >= self.deadline;
            if out_of_time || attempts > self.shared.opts.retry_count {
                return Err((failure, attempts));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One attempt: rounds of wait and commit until held, impossible, or the deadline. The
    /// nodes are told the time left (`WAIT`), but a node checks blocked clients' timeouts only
    /// every 1/hz s (100 ms by default), so the client keeps the deadline itself. An attempt
    /// gets at least one whole call (per-node timeout and replica acknowledgement), so that a
    /// zero `wait` still asks once and hears the answer.
    async fn attempt(self: &Arc<Self>, base: &str) -> Result<Acquired, AttemptError> {
        let nodes = self.shared.nodes();
        let (machine, mut steps) = Acquisition::start_needing(nodes, self.kind.quorum(nodes));
        let mut run = Attempt {
            wait: self,
            base,
            machine,
            inflight: FuturesUnordered::new(),
            why: vec![None; self.shared.nodes()],
            lease_from: self.shared.clock.now(),
            withdraw_round: Some(0),
            over: CancellationToken::new(),
            released: CancellationToken::new(),
        };
        let left = self.deadline.saturating_duration_since(run.lease_from);
        let out_of_time = tokio::time::sleep(left.max(self.shared.call_bound()));
        tokio::pin!(out_of_time);
        loop {
            for step in std::mem::take(&mut steps) {
                match run.perform(step) {
                    None => {}
                    Some(Ok((owner, token))) => {
                        let released = run.released.clone();
                        return self
                            .check_lease(owner, token, run.lease_from, released)
                            .await;
                    }
                    Some(Err(failure)) => {
                        // No majority possible: release before answering, as try_lock does.
                        run.withdraw_round = None;
                        let owner = round_owner(base, run.machine.round());
                        let (shared, resource) = (self.shared.clone(), self.resource.clone());
                        release_on(shared, resource, owner, self.everywhere()).await;
                        return Err(failure);
                    }
                }
            }
            tokio::select! {
                Some((event, why)) = run.inflight.next() => steps = run.on(event, why),
                _ = &mut out_of_time => return Err(run.failure()),
            }
        }
    }

    /// `ACQUIRE ... WAIT ... [TICKET]` on `node` as the owner of `round`.
    fn wait(self: &Arc<Self>, node: usize, round: u32, base: &str) -> BoxFuture<'static, Reply> {
        let owner = round_owner(base, round);
        if let Some(probe) = &self.probe {
            probe.set(&owner);
        }
        let this = self.clone();
        Box::pin(async move {
            let this = &this;
            let left = this
                .deadline
                .saturating_duration_since(this.shared.clock.now());
            let request = Request::Wait {
                resource: &this.resource,
                owner: &owner,
                ttl_ms: ms(this.ttl),
                timeout_ms: ms(left), // at least 1: 0 would mean no limit
                ticket: this.ticket,
                kind: this.kind,
            };
            let reply = this.call(node, request).await;
            let unavailable = Event::Unavailable { node, round };
            match reply {
                Ok(Value::Int(token)) if token > 0 => {
                    let token = token as u64;
                    (Event::Granted { node, round, token }, None)
                }
                Ok(Value::Nil) => (unavailable, Some(Why::TimedOut)),
                Ok(other) => {
                    let why = format!("unexpected reply {other:?}");
                    (unavailable, Some(Why::Failed(this.failure(node, &why))))
                }
                Err(failure) if is_wrong_kind(&failure) => {
                    (unavailable, Some(Why::WrongKind(failure)))
                }
                Err(failure) => (unavailable, Some(Why::Failed(failure))),
            }
        })
    }

    /// `FENCE ... PX ttl`: commits `token` and starts the lease afresh.
    fn fence(
        self: &Arc<Self>,
        node: usize,
        round: u32,
        owner: &str,
        token: u64,
    ) -> BoxFuture<'static, Reply> {
        let owner = owner.to_string();
        let this = self.clone();
        Box::pin(async move {
            let request = Request::Fence {
                resource: &this.resource,
                owner: &owner,
                token,
                ttl_ms: Some(ms(this.ttl)),
            };
            let committed = matches!(this.call(node, request).await, Ok(Value::Int(1)));
            (
                Event::Fenced {
                    node,
                    round,
                    committed,
                },
                None,
            )
        })
    }

    /// Held: the validity left, counted from the request that last set the TTL. With one node
    /// that is the wait itself, whose grant may have come long after it was sent: then the TTL
    /// is renewed once, and validity counts from the renewal.
    async fn check_lease(
        &self,
        owner: String,
        token: u64,
        lease_from: Instant,
        released: CancellationToken,
    ) -> Result<Acquired, AttemptError> {
        let left = self.validity_since(lease_from);
        let long_enough = left.is_some_and(|left| left * 2 >= self.ttl);
        if let (Some(left), true) = (left, long_enough || self.shared.nodes() > 1) {
            return Ok(self.acquired(owner, token, left, released));
        }
        if self.shared.nodes() == 1 {
            let renewed_from = self.shared.clock.now();
            let request = Request::Extend {
                resource: &self.resource,
                owner: &owner,
                ttl_ms: ms(self.ttl),
            };
            let renewed = matches!(self.call(0, request).await, Ok(Value::Int(1)));
            if let (true, Some(left)) = (renewed, self.validity_since(renewed_from)) {
                return Ok(self.acquired(owner, token, left, released));
            }
        }
        released.cancel();
        self.release_later(owner, (0..self.shared.nodes()).collect());
        Err(AttemptError::ValidityExpired)
    }

    fn validity_since(&self, from: Instant) -> Option<Duration> {
        let drift = &self.shared.opts.rounds.drift;
        validity(self.ttl, from, self.shared.clock.now(), drift)
    }

    fn acquired(
        &self,
        owner: String,
        token: u64,
        left: Duration,
        released: CancellationToken,
    ) -> Acquired {
        let valid_until = self.shared.clock.now() + left;
        Acquired {
            owner,
            granted: Granted { token, valid_until },
            released,
        }
    }

    async fn call(&self, node: usize, request: Request<'_>) -> Result<Value, NodeFailure> {
        let timeout = self.shared.opts.rounds.timeout;
        self.shared.transport.call(node, request, timeout).await
    }

    /// Lets requests still out run to their end in the background, and releases any grant that
    /// comes back stale: always (`stale_from` `None`), or once `stale_from` is cancelled (the
    /// holder released). A RELEASE and a wait travel on different connections, so a wait can
    /// reach a node after the RELEASE meant to withdraw it; granted there, it would hold the lock
    /// until its TTL with nobody to release it.
    fn drain(
        &self,
        requests: FuturesUnordered<BoxFuture<'static, Reply>>,
        base: &str,
        stale_from: Option<CancellationToken>,
    ) {
        if requests.is_empty() {
            return;
        }
        let (shared, resource) = (self.shared.clone(), self.resource.clone());
        let base = base.to_string();
        self.shared.spawn(requests.for_each(move |(event, _)| {
            let stale = stale_from
                .as_ref()
                .is_none_or(CancellationToken::is_cancelled);
            if let (Event::Granted { node, round, .. }, true) = (event, stale) {
                let owner = round_owner(&base, round);
                let release = release_on(shared.clone(), resource.clone(), owner, vec![node]);
                shared.spawn(release);
            }
            async {}
        }));
    }

    /// RELEASE `owner` on `nodes` without waiting for the answers: frees what it was granted and
    /// withdraws its queued waits (their blocked calls answer nil and end).
    fn release_later(&self, owner: String, nodes: Vec<usize>) {
        let (shared, resource) = (self.shared.clone(), self.resource.clone());
        self.shared
            .spawn(release_on(shared, resource, owner, nodes));
    }

    fn everywhere(&self) -> Vec<usize> {
        (0..self.shared.nodes()).collect()
    }

    fn failure(&self, node: usize, reason: &str) -> NodeFailure {
        NodeFailure {
            node: self.shared.transport.name(node).to_string(),
            reason: reason.to_string(),
        }
    }
}

/// RELEASE `owner` of `resource` on `nodes`, each within the per-node timeout.
async fn release_on(shared: Arc<Shared>, resource: String, owner: String, nodes: Vec<usize>) {
    let timeout = shared.opts.rounds.timeout;
    let release = Request::Release {
        resource: &resource,
        owner: &owner,
    };
    let calls = nodes
        .iter()
        .map(|&n| shared.transport.call(n, release, timeout));
    join_all(calls).await;
}

fn round_owner(base: &str, round: u32) -> String {
    format!("{base}:{round}")
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Wall-clock µs, strictly increasing within this process (two calls in the same µs must not
/// tie: equal tickets cannot wound each other, and an even split between them would stand until
/// the TTL). Across processes a tie is possible but costs only time, never safety.
fn draw_ticket() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX >> 1));
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(now_us.max(last + 1))
        })
        .unwrap_or(0);
    now_us.max(previous + 1)
}

#[path = "waiting_attempt.rs"]
mod attempt;
use attempt::{Attempt, Why};

#[cfg(test)]
#[path = "waiting_tests.rs"]
mod tests;
