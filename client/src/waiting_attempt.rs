//! One attempt of a queue-mode `lock()` while its requests are out: what each reply does to the
//! acquisition machine, when a node is asked again, and what is withdrawn when the attempt ends
//! without the lock. A child of `waiting`, whose private helpers it uses.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use super::{round_owner, QueueWait, Reply};
use crate::acquisition::{Acquisition, Event, Step};
use crate::error::NodeFailure;
use crate::round::AttemptError;

/// Why a node's wait ended without a grant.
#[derive(Debug, Clone)]
pub(super) enum Why {
    /// The wait ran to the deadline: others held the lock there all along.
    TimedOut,
    Failed(NodeFailure),
    /// The node holds the resource as another kind: the attempt ends at once.
    WrongKind(NodeFailure),
}

/// One attempt while its requests are out.
pub(super) struct Attempt<'a> {
    pub(super) wait: &'a Arc<QueueWait>,
    pub(super) base: &'a str,
    pub(super) machine: Acquisition,
    pub(super) inflight: FuturesUnordered<BoxFuture<'static, Reply>>,
    /// This round's nodes whose wait ended without a grant, and why.
    pub(super) why: Vec<Option<Why>>,
    /// When the request that sets the TTL the holder counts on was sent.
    pub(super) lease_from: Instant,
    /// The round to withdraw if the attempt ends without holding (`None` once held).
    pub(super) withdraw_round: Option<u32>,
    /// Set when the attempt ends: waits scheduled to be asked again are not sent any more.
    pub(super) over: CancellationToken,
    /// Cancelled when the holder releases (or the held lock is given up).
    pub(super) released: CancellationToken,
}

impl<'a> Attempt<'a> {
    /// Sends what `step` asks for; the attempt's end once held (owner, token) or failed.
    pub(super) fn perform(&mut self, step: Step) -> Option<Result<(String, u64), AttemptError>> {
        let (wait, base) = (self.wait, self.base);
        match step {
            Step::Wait { round, nodes } => {
                self.lease_from = wait.shared.clock.now();
                self.why = vec![None; wait.shared.nodes()];
                let waits = nodes.into_iter().map(|n| wait.wait(n, round, base));
                self.inflight.extend(waits);
            }
            Step::Fence {
                round,
                token,
                nodes,
            } => {
                self.lease_from = wait.shared.clock.now();
                let owner = round_owner(base, round);
                let fences = nodes
                    .into_iter()
                    .map(|n| wait.fence(n, round, &owner, token));
                self.inflight.extend(fences);
            }
            Step::Release { round, nodes } => wait.release_later(round_owner(base, round), nodes),
            Step::Held { token } => {
                self.withdraw_round = None;
                self.keep_waiting();
                return Some(Ok((round_owner(base, self.machine.round()), token)));
            }
            Step::Failed => return Some(Err(self.failure())),
        }
        None
    }

    /// Held on a majority: the waits still queued on the other nodes stay, in the background,
    /// so those nodes too grant the lock to its holder when they can (as protocol.md §5 and the
    /// model have it). The lock then does not sit on a bare majority, where one node losing its
    /// data would be enough for a second holder. The holder's RELEASE withdraws them; otherwise
    /// they end at the deadline.
    fn keep_waiting(&mut self) {
        self.over.cancel();
        let leftover = std::mem::take(&mut self.inflight);
        self.wait
            .drain(leftover, self.base, Some(self.released.clone()));
    }

    pub(super) fn on(&mut self, event: Event, why: Option<Why>) -> Vec<Step> {
        let current = self.machine.round();
        if let Some(Why::WrongKind(_)) = &why {
            self.why = vec![why; self.why.len()];
            return vec![Step::Failed];
        }
        if let (Event::Unavailable { node, round }, Some(why)) = (event, why) {
            if round == current {
                if matches!(why, Why::Failed(_)) {
                    self.ask_again(node, round);
                }
                self.why[node] = Some(why);
            }
        }
        let steps = self.machine.on(event);
        self.withdraw_round = Some(self.machine.round());
        steps
    }

    /// A node that could not be reached is asked again after the retry pause, while the round
    /// lasts: a node that restarts comes back into the round instead of only into the next
    /// attempt. The machine still counts it unavailable (so it gives up early when a majority
    /// is out of reach); a grant from the repeated wait is taken like any other. Repeating a
    /// wait is harmless: the same owner asking again keeps one place (the model's duplicated
    /// requests).
    fn ask_again(&mut self, node: usize, round: u32) {
        let (wait, base) = (self.wait.clone(), self.base.to_string());
        let pause = wait.shared.retry_pause();
        let over = self.over.clone();
        self.inflight.push(Box::pin(async move {
            tokio::time::sleep(pause).await;
            if over.is_cancelled() {
                return (Event::Unavailable { node, round }, None);
            }
            wait.wait(node, round, &base).await
        }));
    }

    /// No majority this round. If the nodes that failed leave too few, that is the error;
    /// otherwise the others held the lock until the deadline: contended.
    pub(super) fn failure(&self) -> AttemptError {
        if let Some(Some(Why::WrongKind(failure))) = self.why.first() {
            return AttemptError::WrongKind(failure.reason.clone());
        }
        let failures: Vec<NodeFailure> = self
            .why
            .iter()
            .filter_map(|why| match why {
                Some(Why::Failed(failure)) => Some(failure.clone()),
                _ => None,
            })
            .collect();
        let nodes = self.wait.shared.nodes();
        if nodes - failures.len() >= self.wait.kind.quorum(nodes) {
            return AttemptError::Contended;
        }
        AttemptError::NoQuorum(failures)
    }
}

/// An attempt that ends without holding the lock (deadline, failure, or the caller dropping
/// `lock()` midway: a `timeout` or `select!` around it) withdraws its round everywhere, so no
/// wait and no uncommitted grant is left behind on the nodes.
impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.over.cancel();
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(round) = self.withdraw_round {
            let owner = round_owner(self.base, round);
            self.wait.release_later(owner, self.wait.everywhere());
        }
        let leftover = std::mem::take(&mut self.inflight);
        self.wait.drain(leftover, self.base, None);
    }
}
