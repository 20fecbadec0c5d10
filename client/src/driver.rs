//! Takes a lock over the network: runs [`Attempt`]s (attempt.rs, every decision) by sending what
//! their actions ask through the node calls (calls.rs), feeding the replies back, and keeping
//! the time.
//!
//! - `try_lock` is one attempt that does not wait on the nodes; `lock` runs attempts until one
//!   holds or [`another_attempt`] says stop: queued on the nodes (the default), or without a
//!   server wait and with the retry pause between attempts (retry mode).
//! - Queue mode draws one ticket per `lock()` call, from the wall clock in µs: it orders waiters
//!   across nodes and clients, oldest first. With one node no ticket is sent: FIFO is the order,
//!   and a grant that is never committed must not be revocable.
//! - Round `r` of an attempt asks as owner `<base>:<r>`, each attempt under a new base, so a late
//!   RELEASE of an abandoned round cannot free a later one. A campaign appends ` <value>` (its
//!   label): the value then travels with every grant (docs/election.md).
//! - A queued attempt keeps the deadline itself (a node notices a wait's timeout only at its
//!   next tick) and gets at least one whole call, so a zero wait still asks once and hears the
//!   answer; at its end the round is withdrawn in the background, so the caller gets its answer
//!   on time. An attempt that fails sooner (no quorum possible) releases before answering.
//! - An attempt dropped midway (the caller's `timeout` or `select!`) withdraws its round, and
//!   requests still out run to their end in the background, where [`Attempt::on_late`] says what
//!   a grant they bring is (a RELEASE and a wait travel on different connections: the wait can
//!   reach a node after the RELEASE meant to withdraw it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::attempt::{another_attempt, lease, Action, Attempt, AttemptError, Lease, Policy, Reply};
use crate::backend::new_owner;
use crate::calls::Calls;
use crate::commit;
use crate::errors::NodeFailure;
use crate::probe::WaitProbe;
use crate::refusals::Refusals;
use crate::timing::{draw_ticket, validity, whole_ms};

/// A lock won: its token, until when it is safe to use, and, when its token still owes its
/// commit (commit.rs), the nodes that granted it.
#[derive(Debug, Clone)]
pub struct Granted {
    pub token: u64,
    pub valid_until: Instant,
    /// The TTL the nodes were given.
    pub ttl: Duration,
    /// `Some(nodes that granted)` when the commit is owed until the token is read.
    pub owes_commit: Option<Vec<usize>>,
}

/// A lock won, the owner it is held under, and the token to cancel when the holder releases
/// (requests of the acquisition still out then know a grant they bring is stale).
pub struct Acquired {
    pub owner: String,
    pub granted: Granted,
    pub released: CancellationToken,
}

/// One `lock()` or `try_lock()` call.
pub struct Acquire {
    calls: Calls,
    ttl: Duration,
    deadline: Instant,
    policy: Policy,
    ticket: Option<u64>,
    /// Told the owner of each round as it starts.
    probe: Option<WaitProbe>,
    /// Appended to every round's owner: empty, or ` <value>` for a campaign.
    label: String,
    /// Nodes refused for good in this call (refusals.rs): not connected to again.
    refusals: Refusals,
}

/// What a request left running brings back.
enum Input {
    Replied {
        node: usize,
        round: u32,
        reply: Reply,
    },
    Fenced {
        node: usize,
        round: u32,
        reply: Result<(), NodeFailure>,
    },
    /// The retry pause before asking `node` again is over.
    Paused { node: usize, round: u32 },
}

type Inflight = FuturesUnordered<BoxFuture<'static, Input>>;

impl Acquire {
    pub fn new(
        calls: Calls,
        times: (Duration, Instant),
        policy: Policy,
        probe: Option<WaitProbe>,
    ) -> Arc<Acquire> {
        Arc::new(Acquire::made(calls, times, policy, probe, String::new()))
    }

    /// A campaign's call: its owners labelled ` <value>` (see the module docs).
    pub fn labelled(
        calls: Calls,
        times: (Duration, Instant),
        policy: Policy,
        value: &str,
    ) -> Arc<Acquire> {
        let label = if value.is_empty() {
            String::new()
        } else {
            format!(" {value}")
        };
        Arc::new(Acquire::made(calls, times, policy, None, label))
    }

    fn made(
        calls: Calls,
        (ttl, deadline): (Duration, Instant),
        policy: Policy,
        probe: Option<WaitProbe>,
        label: String,
    ) -> Acquire {
        let nodes = calls.backend().nodes();
        let queued_on_several = policy == Policy::Queue && nodes > 1;
        Acquire {
            refusals: Refusals::new(nodes),
            ticket: queued_on_several.then(draw_ticket),
            calls,
            ttl: whole_ms(ttl),
            deadline,
            policy,
            probe,
            label,
        }
    }

    pub fn calls(&self) -> &Calls {
        &self.calls
    }

    /// Attempts until one holds (at most one when `once`); on failure why, and how many.
    pub async fn run(self: &Arc<Self>, once: bool) -> Result<Acquired, (AttemptError, u32)> {
        let backend = self.calls.backend();
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            let error = match self.attempt(&new_owner()).await {
                Ok(acquired) => return Ok(acquired),
                Err(error) => error,
            };
            let pause = backend.retry_pause();
            let out_of_time = backend.clock.now() + pause > self.deadline;
            let retries = (attempts, backend.opts.retry_count);
            // No attempt can change these: two nodes reaching one server, or refusals waiting
            // cannot cure leaving a quorum out of reach.
            let needed = self.calls.kind().quorum(backend.nodes());
            let refused =
                backend.transport.refusal().is_some() || self.refusals.out_of_reach(needed);
            if once || refused || !another_attempt(self.policy, &error, out_of_time, retries) {
                return Err((error, attempts));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One attempt under owners `base:<round>`.
    async fn attempt(self: &Arc<Self>, base: &str) -> Result<Acquired, AttemptError> {
        let backend = self.calls.backend();
        let nodes = backend.nodes();
        let needed = self.calls.kind().quorum(nodes);
        let (core, mut actions) = Attempt::start(nodes, needed, self.policy);
        let mut run = Running::new(self, base, core);
        let left = self.deadline.saturating_duration_since(run.lease_from);
        let out_of_time = tokio::time::sleep(left.max(backend.call_bound()));
        tokio::pin!(out_of_time);
        loop {
            if let Some(end) = run.perform(actions).await {
                return run.finish(end).await;
            }
            if run.inflight.is_empty() {
                actions = run.core.on_deadline(); // nothing left to hear from
                continue;
            }
            actions = tokio::select! {
                Some(input) = run.inflight.next() => match backend.transport.refusal() {
                    None => run.feed(input),
                    Some(_) => run.refuse(input),
                },
                _ = &mut out_of_time, if self.policy == Policy::Queue => {
                    run.timed_out = true;
                    run.core.on_deadline()
                }
            };
        }
    }

    /// RELEASE of `owner` on every node this call was not refused by (refusals.rs).
    async fn release_everywhere(&self, owner: &str) {
        let everywhere: Vec<usize> = (0..self.calls.backend().nodes()).collect();
        let nodes = self.refusals.reachable(&everywhere);
        self.calls.release_on(owner, &nodes).await;
    }

    fn validity_since(&self, from: Instant) -> Option<Duration> {
        let backend = self.calls.backend();
        validity(
            self.ttl,
            from,
            backend.clock.now(),
            &backend.opts.rounds.drift,
        )
    }

    /// Held: what the lease comes to, counted from the request that last set the TTL (see
    /// [`lease`]). Given up, the lock is released everywhere first.
    async fn check_lease(
        &self,
        (owner, token, holding): (String, u64, Vec<usize>),
        lease_from: Instant,
        released: CancellationToken,
    ) -> Result<Acquired, AttemptError> {
        let backend = self.calls.backend();
        let nodes = backend.nodes();
        let mut left = lease(nodes, self.validity_since(lease_from), self.ttl, false);
        if left == Lease::Renew {
            let renewed_from = backend.clock.now();
            let renewed = self.calls.renew(0, &owner, self.ttl).await;
            let since = self.validity_since(renewed_from).filter(|_| renewed);
            left = lease(nodes, since, self.ttl, true);
        }
        if let Lease::Held(left) = left {
            let valid_until = backend.clock.now() + left;
            let no_wait = matches!(self.policy, Policy::NoWait { .. });
            let owed = commit::owed(no_wait, nodes, backend.opts.rounds.fencing);
            let granted = Granted {
                token,
                valid_until,
                ttl: self.ttl,
                owes_commit: owed.then_some(holding),
            };
            return Ok(Acquired {
                owner,
                granted,
                released,
            });
        }
        released.cancel();
        self.release_everywhere(&owner).await; // before answering, as any failure before the deadline
        Err(AttemptError::ValidityExpired)
    }
}

/// How an attempt ended.
enum End {
    Held { round: u32, token: u64 },
    Failed(AttemptError),
}

/// One attempt while its requests are out.
struct Running<'a> {
    acquire: &'a Arc<Acquire>,
    base: &'a str,
    core: Attempt,
    inflight: Inflight,
    /// When the request that set the TTL the holder counts on was sent.
    lease_from: Instant,
    /// Ended by its deadline: its round is withdrawn in the background.
    timed_out: bool,
    /// Ended because two nodes reach one server: withdrawn in the background too, since a
    /// request still out may hold a connection the withdrawal needs (a commit connecting).
    refused: bool,
    /// Held, or its round already withdrawn: nothing for `Drop` to withdraw.
    settled: bool,
    /// Cancelled when the holder releases (or the lock is given up).
    released: CancellationToken,
}

impl<'a> Running<'a> {
    fn new(acquire: &'a Arc<Acquire>, base: &'a str, core: Attempt) -> Running<'a> {
        Running {
            lease_from: acquire.calls.backend().clock.now(),
            acquire,
            base,
            core,
            inflight: FuturesUnordered::new(),
            timed_out: false,
            refused: false,
            settled: false,
            released: CancellationToken::new(),
        }
    }

    fn owner(&self, round: u32) -> String {
        round_owner(self.base, round, &self.acquire.label)
    }

    fn now(&self) -> Instant {
        self.acquire.calls.backend().clock.now()
    }

    /// Does what `actions` ask; the attempt's end, if one of them is it.
    async fn perform(&mut self, actions: Vec<Action>) -> Option<End> {
        let failing = actions.iter().any(|a| matches!(a, Action::Failed(_)));
        let mut end = None;
        for action in actions {
            match action {
                Action::Ask { round, nodes } => {
                    self.lease_from = self.now();
                    if let Some(probe) = &self.acquire.probe {
                        probe.set(&self.owner(round));
                    }
                    nodes.into_iter().for_each(|node| self.ask(node, round));
                }
                Action::AskAgain {
                    node,
                    round,
                    after_pause,
                } => self.ask_again(node, round, after_pause),
                Action::Fence {
                    round,
                    token,
                    nodes,
                } => self.fence(round, token, nodes),
                Action::Release { round, nodes } => {
                    // No quorum possible: release before answering; at the deadline, after.
                    let release = self.release(round, nodes);
                    if failing && !self.timed_out && !self.refused {
                        release.await;
                    } else {
                        self.acquire.calls.backend().spawn(release);
                    }
                    self.settled |= failing;
                }
                Action::Held { round, token } => end = Some(End::Held { round, token }),
                Action::Failed(error) => end = Some(End::Failed(error)),
            }
        }
        end
    }

    /// `ACQUIRE` (with `WAIT` in queue mode) on `node` as the owner of `round`.
    fn ask(&mut self, node: usize, round: u32) {
        let (acquire, owner) = (self.acquire.clone(), self.owner(round));
        self.inflight.push(Box::pin(async move {
            let clock = &acquire.calls.backend().clock;
            let wait = (acquire.policy == Policy::Queue).then(|| {
                let left = acquire.deadline.saturating_duration_since(clock.now());
                (left, acquire.ticket)
            });
            let reply = match acquire.refusals.of(node) {
                Some(refused) => refused,
                None => acquire.calls.ask(node, &owner, acquire.ttl, wait).await,
            };
            acquire.refusals.note(node, &reply);
            Input::Replied { node, round, reply }
        }));
    }

    fn ask_again(&mut self, node: usize, round: u32, after_pause: bool) {
        if !after_pause {
            return self.ask(node, round);
        }
        let pause = self.acquire.calls.backend().retry_pause();
        self.inflight.push(Box::pin(async move {
            tokio::time::sleep(pause).await;
            Input::Paused { node, round }
        }));
    }

    /// `FENCE` on `nodes`; in queue mode with `PX ttl`, which starts the lease afresh.
    fn fence(&mut self, round: u32, token: u64, nodes: Vec<usize>) {
        let queued = self.acquire.policy == Policy::Queue;
        if queued {
            self.lease_from = self.now();
        }
        for node in nodes {
            let (acquire, owner) = (self.acquire.clone(), self.owner(round));
            self.inflight.push(Box::pin(async move {
                let ttl = queued.then_some(acquire.ttl);
                let reply = acquire.calls.fence(node, &owner, token, ttl).await;
                Input::Fenced { node, round, reply }
            }));
        }
    }

    /// RELEASE of the owner of `round` on `nodes`, to await or to run in the background.
    fn release(&self, round: u32, nodes: Vec<usize>) -> BoxFuture<'static, ()> {
        let (calls, owner) = (self.acquire.calls.clone(), self.owner(round));
        let nodes = self.acquire.refusals.reachable(&nodes);
        Box::pin(async move {
            calls.release_on(&owner, &nodes).await;
        })
    }

    /// A reply, into the core.
    fn feed(&mut self, input: Input) -> Vec<Action> {
        match input {
            Input::Replied { node, round, reply } => {
                let past_deadline = self.now() >= self.acquire.deadline;
                self.core.on_reply(node, round, reply, past_deadline)
            }
            Input::Fenced { node, round, reply } => {
                let valid = self.acquire.validity_since(self.lease_from).is_some();
                self.core.on_fenced(node, round, reply, valid)
            }
            Input::Paused { node, round } => self.core.on_pause_over(node, round),
        }
    }

    /// Two nodes turned out to reach one server: no reply counts, a grant brought is given
    /// back, and the round is withdrawn everywhere, as at the deadline.
    fn refuse(&mut self, input: Input) -> Vec<Action> {
        self.refused = true;
        let mut actions = match input {
            Input::Replied { node, round, reply } => self.core.on_late(node, round, reply, false),
            _ => Vec::new(),
        };
        actions.extend(self.core.on_deadline());
        actions
    }

    async fn finish(mut self, end: End) -> Result<Acquired, AttemptError> {
        self.settled = true;
        let (round, token) = match end {
            End::Held { round, token } => (round, token),
            End::Failed(error) => return Err(error),
        };
        let (acquire, owner) = (self.acquire, self.owner(round));
        let (lease_from, released) = (self.lease_from, self.released.clone());
        let holding = self.core.holding_nodes();
        drop(self); // requests still out stay out, in the background (see `Drop`)
        acquire
            .check_lease((owner, token, holding), lease_from, released)
            .await
    }
}

/// An attempt that ends without holding (its deadline, a failure, or the caller dropping
/// `lock()` midway: a `timeout` or `select!` around it) withdraws its round everywhere, so no
/// wait and no uncommitted grant is left on the nodes. Requests still out, held or not, run to
/// their end in the background, and [`Attempt::on_late`] says which grants they bring to release.
impl Drop for Running<'_> {
    fn drop(&mut self) {
        let backend = self.acquire.calls.backend();
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if !self.settled {
            let (acquire, owner) = (self.acquire.clone(), self.owner(self.core.round()));
            backend.spawn(async move {
                acquire.release_everywhere(&owner).await;
            });
        }
        let inflight = std::mem::take(&mut self.inflight);
        if inflight.is_empty() {
            return;
        }
        let (core, released) = (self.core.clone(), self.released.clone());
        let (calls, base) = (self.acquire.calls.clone(), self.base.to_string());
        let label = self.acquire.label.clone();
        backend.spawn(inflight.for_each(move |input| {
            if let Input::Replied {
                node,
                round: r,
                reply,
            } = input
            {
                for action in core.on_late(node, r, reply, released.is_cancelled()) {
                    if let Action::Release { round: r, nodes } = action {
                        let (release, owner) = (calls.clone(), round_owner(&base, r, &label));
                        calls.backend().spawn(async move {
                            release.release_on(&owner, &nodes).await;
                        });
                    }
                }
            }
            async {}
        }));
    }
}

/// Round `round`'s owner under `base`, with the campaign's label if any.
fn round_owner(base: &str, round: u32, label: &str) -> String {
    format!("{base}:{round}{label}")
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
