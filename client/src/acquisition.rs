//! The decisions of one fair acquisition across N nodes, as a pure state machine: replies go in,
//! the next requests come out. The async client drives it over the network; the model checker
//! (`model/`) drives the very same machine over a simulated one.
//!
//! Round by round (docs/protocol.md):
//! 1. Wait on every node with one ticket (`ACQUIRE ... WAIT ... TICKET t`), as owner `o:round`.
//! 2. With grants from a majority, commit their largest token with FENCE on the granting nodes
//!    (phase 2 of quorum fencing). A grant is tentative until committed, and a smaller ticket
//!    may wound it meanwhile; the node then refuses the FENCE.
//! 3. Committed on a majority: held. Otherwise release everything and wait again with the same
//!    ticket (it keeps its place) under a new owner, so a late RELEASE of the old round cannot
//!    touch the new one.
//!
//! With one node there is nothing to commit: the grant is the lock.
//!
//! An attempt that does not wait on the nodes (`try_lock`, retry mode: see `attempt.rs`) runs
//! the same machine for one round only ([`Acquisition::start_once`]): every node's answer comes
//! within the per-node timeout, so the commit waits for all of them and covers every node that
//! granted; a commit that misses fails the acquisition; with fencing off the grants are the lock.

use crate::timing::quorum;

/// What happened on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// The wait of `round` was granted with `token`.
    Granted { node: usize, round: u32, token: u64 },
    /// The wait of `round` ended without a grant (nil, error, timeout, node down).
    Unavailable { node: usize, round: u32 },
    /// The FENCE of `round` answered: committed, or refused (not held any more).
    Fenced {
        node: usize,
        round: u32,
        committed: bool,
    },
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// Wait (ACQUIRE ... WAIT ... TICKET) on these nodes as the owner of `round`.
    Wait { round: u32, nodes: Vec<usize> },
    /// Commit `token` on these nodes as the owner of `round`.
    Fence {
        round: u32,
        token: u64,
        nodes: Vec<usize>,
    },
    /// RELEASE the owner of `round` on these nodes: frees its grants, withdraws its waits.
    Release { round: u32, nodes: Vec<usize> },
    /// The lock is held on a majority with `token`.
    Held { token: u64 },
    /// No majority is possible this round (too many nodes unavailable): give up.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Phase {
    Waiting,
    Committing {
        token: u64,
        pending: Vec<bool>,
        committed: Vec<bool>,
    },
    Held {
        token: u64,
    },
    Failed,
}

/// One acquisition, possibly over several rounds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acquisition {
    nodes: usize,
    /// Grants (and commits) that make it held: a majority, or a semaphore's larger quorum.
    needed: usize,
    round: u32,
    granted: Vec<Option<u64>>,
    unavailable: Vec<bool>,
    phase: Phase,
    /// Once held: the nodes the lock is held on (committed there, or the one node).
    holding: Vec<bool>,
    /// One round only: a commit that misses fails the acquisition instead of waiting again.
    once: bool,
    /// Grants are committed (FENCE) before the lock is held; off only with fencing off.
    commit: bool,
}

impl Acquisition {
    /// Starts round 0 of an exclusive or shared acquisition (a majority): the steps to send.
    pub fn start(nodes: usize) -> (Acquisition, Vec<Step>) {
        Acquisition::start_needing(nodes, quorum(nodes))
    }

    /// Starts round 0 of an acquisition held once `needed` nodes committed (see
    /// [`crate::timing::quorum_for`]).
    pub fn start_needing(nodes: usize, needed: usize) -> (Acquisition, Vec<Step>) {
        Acquisition::start_with(nodes, needed, false, true)
    }

    /// Starts an acquisition of one round (no server wait): held once `needed` nodes committed
    /// (granted, without `commit`), failed otherwise.
    pub fn start_once(nodes: usize, needed: usize, commit: bool) -> (Acquisition, Vec<Step>) {
        Acquisition::start_with(nodes, needed, true, commit)
    }

    fn start_with(
        nodes: usize,
        needed: usize,
        once: bool,
        commit: bool,
    ) -> (Acquisition, Vec<Step>) {
        let acquisition = Acquisition {
            nodes,
            needed: needed.clamp(1, nodes.max(1)),
            round: 0,
            granted: vec![None; nodes],
            unavailable: vec![false; nodes],
            phase: Phase::Waiting,
            holding: vec![false; nodes],
            once,
            commit,
        };
        let steps = vec![Step::Wait {
            round: 0,
            nodes: (0..nodes).collect(),
        }];
        (acquisition, steps)
    }

    pub fn round(&self) -> u32 {
        self.round
    }

    /// The token, once held.
    pub fn held(&self) -> Option<u64> {
        match self.phase {
            Phase::Held { token } => Some(token),
            _ => None,
        }
    }

    pub fn is_over(&self) -> bool {
        matches!(self.phase, Phase::Held { .. } | Phase::Failed)
    }

    /// Once held, the nodes it is held on (where the commit succeeded).
    pub fn holding_nodes(&self) -> Vec<usize> {
        (0..self.nodes).filter(|&n| self.holding[n]).collect()
    }

    /// The token node `node` granted this round, if it did.
    pub fn granted_token(&self, node: usize) -> Option<u64> {
        self.granted.get(node).copied().flatten()
    }

    /// Nodes that granted this round.
    pub fn granted_nodes(&self) -> Vec<usize> {
        (0..self.nodes)
            .filter(|&n| self.granted[n].is_some())
            .collect()
    }

    /// Feeds one reply. Replies of earlier rounds are stale: ignored, except a grant, which is
    /// released at once (a wait can reach a node after the round gave up on it, and would
    /// otherwise hold the lock there until its TTL).
    pub fn on(&mut self, event: Event) -> Vec<Step> {
        let (node, round) = match event {
            Event::Granted { node, round, .. }
            | Event::Unavailable { node, round }
            | Event::Fenced { node, round, .. } => (node, round),
        };
        if node >= self.nodes {
            return Vec::new();
        }
        if round != self.round {
            return match event {
                Event::Granted { .. } if round < self.round => vec![Step::Release {
                    round,
                    nodes: vec![node],
                }],
                _ => Vec::new(),
            };
        }
        match event {
            Event::Granted { token, .. } => self.on_granted(node, token),
            Event::Unavailable { .. } => self.on_unavailable(node),
            Event::Fenced { committed, .. } => self.on_fenced(node, committed),
        }
    }

    fn needed(&self) -> usize {
        self.needed
    }

    fn on_granted(&mut self, node: usize, token: u64) -> Vec<Step> {
        self.granted[node] = Some(token);
        if self.phase != Phase::Waiting {
            return Vec::new(); // a late grant: released with everything else at the end
        }
        self.commit_when_ready()
    }

    /// With grants from a quorum (and, in one round only, every node's answer in, so that the
    /// commit covers every node that granted): commit the largest token, or hold it.
    fn commit_when_ready(&mut self) -> Vec<Step> {
        let grants = self.granted_nodes();
        let answered = (0..self.nodes).all(|n| self.granted[n].is_some() || self.unavailable[n]);
        if grants.len() < self.needed() || (self.once && !answered) {
            return Vec::new();
        }
        let token = grants
            .iter()
            .filter_map(|&n| self.granted[n])
            .max()
            .unwrap_or_default();
        if self.nodes == 1 || !self.commit {
            self.holding = self.granted.iter().map(Option::is_some).collect();
            return self.hold(token);
        }
        let mut pending = vec![false; self.nodes];
        for &n in &grants {
            pending[n] = true;
        }
        self.phase = Phase::Committing {
            token,
            pending,
            committed: vec![false; self.nodes],
        };
        vec![Step::Fence {
            round: self.round,
            token,
            nodes: grants,
        }]
    }

    fn on_unavailable(&mut self, node: usize) -> Vec<Step> {
        self.unavailable[node] = true;
        let possible = (0..self.nodes).filter(|&n| !self.unavailable[n]).count();
        if self.phase == Phase::Waiting && possible < self.needed() {
            return self.fail();
        }
        if self.phase == Phase::Waiting && self.once {
            return self.commit_when_ready(); // maybe the last answer the round waited for
        }
        Vec::new()
    }

    /// Gives up from outside (a deadline, a refused kind): release everything of this round.
    pub fn abandon(&mut self) -> Vec<Step> {
        if self.is_over() {
            return Vec::new();
        }
        self.fail()
    }

    /// No quorum this time: release everything of this round and give up.
    fn fail(&mut self) -> Vec<Step> {
        self.phase = Phase::Failed;
        vec![self.release_all(), Step::Failed]
    }

    fn on_fenced(&mut self, node: usize, ok: bool) -> Vec<Step> {
        let needed = self.needed();
        let Phase::Committing {
            token,
            pending,
            committed,
        } = &mut self.phase
        else {
            return Vec::new();
        };
        if !std::mem::take(&mut pending[node]) {
            return Vec::new(); // a duplicate reply
        }
        committed[node] = ok;
        let count = committed.iter().filter(|&&c| c).count();
        let (token, open) = (*token, pending.iter().filter(|&&p| p).count());
        if count >= needed {
            self.holding = committed.clone();
            return self.hold(token);
        }
        if count + open < needed {
            return if self.once {
                self.fail()
            } else {
                self.next_round()
            };
        }
        Vec::new()
    }

    /// Held. Waits still queued on nodes that did not grant stay: a late grant there is the
    /// holder's too, released with everything else at the end.
    fn hold(&mut self, token: u64) -> Vec<Step> {
        self.phase = Phase::Held { token };
        vec![Step::Held { token }]
    }

    /// The commit missed a majority: release everything of this round, wait again.
    fn next_round(&mut self) -> Vec<Step> {
        let release = self.release_all();
        self.round += 1;
        self.granted = vec![None; self.nodes];
        self.unavailable = vec![false; self.nodes];
        self.phase = Phase::Waiting;
        vec![
            release,
            Step::Wait {
                round: self.round,
                nodes: (0..self.nodes).collect(),
            },
        ]
    }

    fn release_all(&self) -> Step {
        Step::Release {
            round: self.round,
            nodes: (0..self.nodes).collect(),
        }
    }
}

#[cfg(test)]
#[path = "acquisition_tests.rs"]
mod tests;
