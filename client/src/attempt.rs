//! One attempt to take a lock, free of I/O: the acquisition machine (acquisition.rs) and every
//! decision the driver takes around it. Replies go in, [`Action`]s come out; driver.rs does the
//! sending, the timers and the background work. The Python and Node clients port this file, and
//! conformance/attempts.json (with replies.json, leases.json, retries.json) pins each decision
//! for all three.
//!
//! - **How a reply counts** ([`classify`]): a grant; *busy*, the lock held by others (nil, or a
//!   queued wait that ran past the deadline unanswered: a server notices a wait's timeout only at
//!   its next tick, so the client's own time for the call may run out first); a node failure
//!   (cannot connect, connection broken, an error reply, no reply to a request that does not
//!   wait); the kind refused (`WRONGKIND`), or an argument refused (`ERR ... must be ...`): then
//!   the attempt ends, asking again cannot change it.
//! - **Asking again**: a failed node is asked again; a queued wait after the retry pause while
//!   its round lasts (the machine counts the node out meanwhile, so a lost majority ends the
//!   attempt early), a plain ACQUIRE at once, once per round, while a quorum has not granted
//!   yet (its failure counts only if the repeat fails too). ACQUIRE by the same owner is idempotent.
//! - **Once held**, requests still out stay out: a grant they bring is the holder's (the lock
//!   then does not sit on a bare majority) and goes with the holder's RELEASE. A grant of an
//!   earlier round, of an attempt that did not hold, or that comes after the holder released, is
//!   released at once ([`Attempt::on_late`]).
//! - **Why it failed** ([`AttemptError`]): too many failed nodes for a quorum is no quorum; a
//!   one-round commit that missed is no quorum, or expired once validity ran out; otherwise the
//!   others held it: contended.
//! - **The lease** ([`lease`]) and **another attempt** ([`another_attempt`]).

use std::time::Duration;

use crate::acquisition::{Acquisition, Event, Step};
use crate::errors::{is_refused_argument, is_wrong_kind, Incurable, NodeFailure};

/// How an attempt asks the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Queue on the nodes (`ACQUIRE ... WAIT`), round after round until the deadline; the
    /// commit (`FENCE ... PX`) starts the lease afresh.
    Queue,
    /// One plain `ACQUIRE` per node and one round (`try_lock`, retry mode); the lease counts
    /// from the round's start. `commit` is off only with fencing off.
    NoWait { commit: bool },
}

/// A node's answer to an ask (`ACQUIRE`, with or without `WAIT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Granted(u64),
    /// Nil: held by others, or the wait ended on the node without a grant.
    Nil,
    /// No usable answer (see [`NodeFailure`]).
    Failed(NodeFailure),
}

/// How a reply counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Granted(u64),
    /// Held by others until the ask ended.
    Busy,
    Failed(NodeFailure),
    WrongKind(NodeFailure),
    /// The node refused an argument of the request.
    Invalid(NodeFailure),
}

impl Outcome {
    /// A refusal that asking again cannot change: the attempt ends with it.
    fn ends_the_attempt(&self) -> Option<AttemptError> {
        match self {
            Outcome::WrongKind(failure) => Some(AttemptError::WrongKind(failure.clone())),
            Outcome::Invalid(failure) => Some(AttemptError::Invalid(failure.clone())),
            _ => None,
        }
    }
}

/// Why one attempt failed. The caller retries or turns it into an [`crate::Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptError {
    /// Enough nodes answered, but another owner holds it on some of them.
    Contended,
    /// Too few nodes answered for a quorum to be possible (or to commit).
    NoQuorum(Vec<NodeFailure>),
    /// A node holds the resource as another kind (the node, and its message).
    WrongKind(NodeFailure),
    /// A node refused an argument of the request (the node, and its message).
    Invalid(NodeFailure),
    ValidityExpired,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Ask `nodes` as the owner of `round`: a new round, whose lease counts from here (until a
    /// queued commit restarts it).
    Ask {
        round: u32,
        nodes: Vec<usize>,
    },
    /// Ask `node` again as the owner of `round`: at once, or after the retry pause (then
    /// [`Attempt::on_pause_over`] says whether it still goes).
    AskAgain {
        node: usize,
        round: u32,
        after_pause: bool,
    },
    /// Commit `token` on `nodes` as the owner of `round`.
    Fence {
        round: u32,
        token: u64,
        nodes: Vec<usize>,
    },
    /// RELEASE the owner of `round` on `nodes`: frees its grants, withdraws its waits.
    Release {
        round: u32,
        nodes: Vec<usize>,
    },
    /// Held with `token` by the owner of `round` (its lease to check: [`lease`]).
    Held {
        round: u32,
        token: u64,
    },
    Failed(AttemptError),
}

/// How a reply to an ask counts, given the policy and whether the lock() call's deadline had
/// passed when the reply came.
pub fn classify(reply: Reply, policy: Policy, past_deadline: bool) -> Outcome {
    match reply {
        Reply::Granted(token) => Outcome::Granted(token),
        Reply::Nil => Outcome::Busy,
        Reply::Failed(failure) if is_wrong_kind(&failure) => Outcome::WrongKind(failure),
        Reply::Failed(failure) if is_refused_argument(&failure) => Outcome::Invalid(failure),
        Reply::Failed(failure) if failure.incurable == Some(Incurable::NoDatabase) => {
            Outcome::Invalid(failure)
        }
        Reply::Failed(failure) if failure.no_reply && policy == Policy::Queue && past_deadline => {
            Outcome::Busy
        }
        Reply::Failed(failure) => Outcome::Failed(failure),
    }
}

/// What a held lock comes to, given the validity `left` counted from the request that last set
/// its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    Held(Duration),
    /// One node, whose grant may have come long after the wait was sent: renew the TTL once
    /// (EXTEND) and count validity from the renewal.
    Renew,
    Expired,
}

/// The lease of a lock held on `nodes` nodes (`renewed`: after the one renewal).
pub fn lease(nodes: usize, left: Option<Duration>, ttl: Duration, renewed: bool) -> Lease {
    match left {
        _ if nodes == 1 && !renewed && left.is_none_or(|left| left * 2 < ttl) => Lease::Renew,
        Some(left) => Lease::Held(left),
        None => Lease::Expired,
    }
}

/// Whether a failed attempt is followed by another (after the retry pause): not when the kind
/// or an argument was refused, nor when a queued attempt was contended (it waited to the deadline), nor out of
/// time (`out_of_time`: the pause would end past the deadline) or of retries.
pub fn another_attempt(
    policy: Policy,
    error: &AttemptError,
    out_of_time: bool,
    (attempts, retry_count): (u32, u32),
) -> bool {
    match error {
        AttemptError::WrongKind(_) | AttemptError::Invalid(_) => false,
        AttemptError::Contended if policy == Policy::Queue => false,
        _ => !out_of_time && attempts <= retry_count,
    }
}

/// One attempt: the machine, and what the driver needs to know of this round.
#[derive(Debug, Clone)]
pub struct Attempt {
    policy: Policy,
    machine: Acquisition,
    nodes: usize,
    needed: usize,
    /// This round: how each node's last reply counted (`None`: none yet, or still out).
    outcomes: Vec<Option<Outcome>>,
    /// This round: the nodes asked again at once (a plain ACQUIRE is, once).
    asked_again: Vec<bool>,
    /// This round's commit: the granting nodes that did not commit, and why.
    uncommitted: Vec<NodeFailure>,
    /// Once held: its round (grants of that round coming later are the holder's).
    held_round: Option<u32>,
}

impl Attempt {
    /// Round 0 of an attempt held once `needed` of `nodes` nodes committed.
    pub fn start(nodes: usize, needed: usize, policy: Policy) -> (Attempt, Vec<Action>) {
        let (machine, steps) = match policy {
            Policy::Queue => Acquisition::start_needing(nodes, needed),
            Policy::NoWait { commit } => Acquisition::start_once(nodes, needed, commit),
        };
        let mut attempt = Attempt {
            policy,
            machine,
            nodes,
            needed: needed.clamp(1, nodes.max(1)),
            outcomes: vec![None; nodes],
            asked_again: vec![false; nodes],
            uncommitted: Vec::new(),
            held_round: None,
        };
        let actions = attempt.act(steps, true);
        (attempt, actions)
    }

    pub fn round(&self) -> u32 {
        self.machine.round()
    }

    /// Once held, the nodes it is held on.
    pub fn holding_nodes(&self) -> Vec<usize> {
        self.machine.holding_nodes()
    }

    pub fn is_over(&self) -> bool {
        self.machine.is_over()
    }

    /// `node`'s reply to its ask of `round`.
    pub fn on_reply(
        &mut self,
        node: usize,
        round: u32,
        reply: Reply,
        past_deadline: bool,
    ) -> Vec<Action> {
        if self.is_over() {
            return self.on_late(node, round, reply, false);
        }
        let current = round == self.round() && node < self.nodes;
        let outcome = classify(reply, self.policy, past_deadline);
        let event = match &outcome {
            Outcome::Granted(token) => Event::Granted {
                node,
                round,
                token: *token,
            },
            _ => Event::Unavailable { node, round },
        };
        if !current {
            let steps = self.machine.on(event); // a stale grant is released
            return self.act(steps, true);
        }
        if let Some(error) = outcome.ends_the_attempt() {
            return self.give_up(error);
        }
        // A refusal waiting cannot cure is not asked again within the call (driver.rs keeps it).
        let failed = matches!(&outcome, Outcome::Failed(f) if f.incurable.is_none());
        self.outcomes[node] = Some(outcome);
        if failed && self.ask_at_once(node) {
            let again = Action::AskAgain {
                node,
                round,
                after_pause: false,
            };
            return vec![again]; // the repeat's reply counts instead
        }
        let steps = self.machine.on(event);
        let mut actions = self.act(steps, true);
        if failed && self.policy == Policy::Queue && !self.is_over() {
            actions.push(Action::AskAgain {
                node,
                round,
                after_pause: true,
            });
        }
        actions
    }

    /// A plain ACQUIRE that failed is repeated at once, once per round, unless a quorum granted
    /// without it (see the module's notes).
    fn ask_at_once(&mut self, node: usize) -> bool {
        let quorum_granted = self.machine.granted_nodes().len() >= self.needed;
        if self.policy == Policy::Queue || self.asked_again[node] || quorum_granted {
            return false;
        }
        self.asked_again[node] = true;
        true
    }

    /// The retry pause of [`Action::AskAgain`] is over: the ask goes if its round still lasts.
    pub fn on_pause_over(&mut self, node: usize, round: u32) -> Vec<Action> {
        if self.is_over() || round != self.round() {
            return Vec::new();
        }
        vec![Action::AskAgain {
            node,
            round,
            after_pause: false,
        }]
    }

    /// `node`'s reply to the commit of `round`: committed, or why not (refused: not held any
    /// more; or failed); `valid`: whether validity is left now.
    pub fn on_fenced(
        &mut self,
        node: usize,
        round: u32,
        reply: Result<(), NodeFailure>,
        valid: bool,
    ) -> Vec<Action> {
        let committed = reply.is_ok();
        if let (Err(failure), true) = (reply, round == self.round() && !self.is_over()) {
            self.uncommitted.push(failure);
        }
        let event = Event::Fenced {
            node,
            round,
            committed,
        };
        let steps = self.machine.on(event);
        self.act(steps, valid)
    }

    /// The attempt's time ran out (queued attempts only): its round is withdrawn.
    pub fn on_deadline(&mut self) -> Vec<Action> {
        if self.is_over() {
            return Vec::new();
        }
        let verdict = self.verdict(true);
        self.give_up(verdict)
    }

    /// A reply that comes after the attempt ended, or after the holder released (`released`):
    /// a grant is released at once unless it is the current holder's.
    pub fn on_late(&self, node: usize, round: u32, reply: Reply, released: bool) -> Vec<Action> {
        let Reply::Granted(_) = reply else {
            return Vec::new();
        };
        if self.held_round == Some(round) && !released {
            return Vec::new(); // the holder's: its RELEASE frees it
        }
        vec![Action::Release {
            round,
            nodes: vec![node],
        }]
    }

    /// Ends the attempt now: its round withdrawn everywhere.
    fn give_up(&mut self, error: AttemptError) -> Vec<Action> {
        let mut actions: Vec<Action> = (self.machine.abandon().into_iter())
            .filter_map(|step| match step {
                Step::Release { round, nodes } => Some(Action::Release { round, nodes }),
                _ => None,
            })
            .collect();
        actions.push(Action::Failed(error));
        actions
    }

    /// The machine's steps as actions.
    fn act(&mut self, steps: Vec<Step>, valid: bool) -> Vec<Action> {
        let mut actions = Vec::new();
        for step in steps {
            actions.push(match step {
                Step::Wait { round, nodes } => {
                    self.outcomes = vec![None; self.nodes];
                    self.asked_again = vec![false; self.nodes];
                    self.uncommitted.clear();
                    Action::Ask { round, nodes }
                }
                Step::Fence {
                    round,
                    token,
                    nodes,
                } => Action::Fence {
                    round,
                    token,
                    nodes,
                },
                Step::Release { round, nodes } => Action::Release { round, nodes },
                Step::Held { token } => {
                    self.held_round = Some(self.round());
                    Action::Held {
                        round: self.round(),
                        token,
                    }
                }
                Step::Failed => Action::Failed(self.verdict(valid)),
            });
        }
        actions
    }

    /// Why this round came to nothing (see the module's notes).
    fn verdict(&self, valid: bool) -> AttemptError {
        let failures: Vec<NodeFailure> = self
            .outcomes
            .iter()
            .filter_map(|outcome| match outcome {
                Some(Outcome::Failed(failure)) => Some(failure.clone()),
                _ => None,
            })
            .collect();
        if !self.uncommitted.is_empty() {
            if !valid {
                return AttemptError::ValidityExpired;
            }
            return AttemptError::NoQuorum([failures, self.uncommitted.clone()].concat());
        }
        if self.nodes - failures.len() < self.needed {
            return AttemptError::NoQuorum(failures);
        }
        AttemptError::Contended
    }
}

#[cfg(test)]
#[path = "attempt_tests.rs"]
mod tests;
