//! The commit a hold may owe, free of I/O (docs/protocol.md §4.1; conformance/commits.json).
//!
//! An attempt that does not wait on the nodes (`try_lock`, retry mode) holds once a quorum
//! granted: its grants are plain, and no ticket can wound them, so exclusion does not need the
//! commit. Its token does: the largest grant is a fencing token only once a quorum committed it
//! (§4). So the commit is paid when the token is first read, and only then: FENCE on every node
//! that granted, the hold's token, the lease set afresh. A quorum of commits gives the token;
//! too few left possible makes the lock lost, never an uncommitted token. A queued hold
//! committed before it was held (a smaller ticket may wound a tentative grant, §5), one node
//! has nothing to commit, and with fencing off there is no fencing token to commit.
//!
//! The model (`model/`) drives this machine too.

/// Whether a hold taken by an attempt of this kind owes a commit before its token is read.
pub fn owed(no_wait: bool, nodes: usize, fencing: bool) -> bool {
    no_wait && nodes > 1 && fencing
}

/// Where a commit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Replies still decide it: reading the token waits.
    Pending,
    /// A quorum committed this token.
    Committed(u64),
    /// Too few nodes can still commit: the lock is lost.
    Lost,
}

/// One commit of one hold's token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Commit {
    needed: usize,
    token: u64,
    /// The nodes asked whose answer has not come.
    pending: Vec<bool>,
    committed: usize,
    outcome: Outcome,
}

impl Commit {
    /// Starts the commit of `token` on `holding` (the nodes that granted it), held once
    /// `needed` of them committed: the machine and the nodes to send `FENCE` to.
    pub fn start(
        nodes: usize,
        needed: usize,
        token: u64,
        holding: &[usize],
    ) -> (Commit, Vec<usize>) {
        let mut pending = vec![false; nodes];
        let asked: Vec<usize> = holding.iter().copied().filter(|&n| n < nodes).collect();
        for &n in &asked {
            pending[n] = true;
        }
        let mut commit = Commit {
            needed: needed.max(1),
            token,
            pending,
            committed: 0,
            outcome: Outcome::Pending,
        };
        commit.decide();
        (commit, asked)
    }

    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    pub fn token(&self) -> u64 {
        self.token
    }

    /// `node`'s answer to its FENCE: committed, or not (refused: no longer held by this owner;
    /// or the node failed). Answers from nodes not asked, repeated, or after the outcome is
    /// decided change nothing.
    pub fn on_fenced(&mut self, node: usize, committed: bool) -> Outcome {
        if self.outcome != Outcome::Pending {
            return self.outcome;
        }
        let Some(pending) = self.pending.get_mut(node) else {
            return self.outcome;
        };
        if !std::mem::take(pending) {
            return self.outcome;
        }
        self.committed += usize::from(committed);
        self.decide();
        self.outcome
    }

    fn decide(&mut self) {
        let open = self.pending.iter().filter(|&&p| p).count();
        if self.committed >= self.needed {
            self.outcome = Outcome::Committed(self.token);
        } else if self.committed + open < self.needed {
            self.outcome = Outcome::Lost;
        }
    }
}
