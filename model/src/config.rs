//! What one model run explores: sizes, fault budgets, which assumptions hold, and (for the
//! mutants) which rule is broken on purpose.

use dlock_client::timing::{quorum, semaphore_quorum};
use dlock_core::Want;

/// When a lock's TTL may run out on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    Never,
    /// Only when its owner is not in the critical section: holders never pause past the TTL
    /// and clocks agree closely enough (Redlock's timing assumptions).
    WhenNotHolding,
    /// At any moment: a holder paused past its TTL, or a node's clock jumped.
    Anytime,
}

/// How nodes crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crashes {
    None,
    /// Restart with the lock and the counter (persistence); waiters and tentative marks are gone.
    KeepState,
    /// Restart empty. The counter comes back above every token the node issued or was fenced
    /// with (the clock floor, assuming clocks agree to within the restart time: see
    /// docs/protocol.md).

    /// floor: tokens are floored by a wall clock that moved on). With quarantine, the node
    /// grants nothing until every lock it may have granted before is over.
    LoseState {
        quarantine: bool,
    },
}

/// How many faults of each kind a run may inject; the state carries what is left of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Budget {
    pub drops: u8,
    pub duplicates: u8,
    pub crashes: u8,
    pub asks_again: u8,
    /// Expiries of a client's lock (an earlier holder's lock may always expire once).
    pub expiries: u8,
    /// Restarts of the gate's server (runs with a gate).
    pub gate_restarts: u8,
}

/// A rule broken on purpose, to show the properties catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// The client takes the largest granted token without the FENCE commit.
    NoCommit,
    /// FENCE applies without checking that the lock is still held by its owner.
    FenceWithoutOwnerCheck,
    /// A smaller ticket revokes committed grants too.
    RevokeCommitted,
    /// Waiters are served in arrival order instead of by ticket.
    FifoQueue,
    /// A semaphore's client is content with a majority instead of `semaphore_quorum`.
    SemaphoreMajority,
    /// A reader's request is shown the holders without the writer.
    ReaderBesideWriter,
    /// A holder whose lease ended is still shown to the rules as a holder.
    ExpiredPermitKept,
    /// The resource takes every write, whatever its token (no gate: what fencing is for).
    UncheckedResource,
    /// The gate lets through a token one below its own.
    GateOneBelow,
    /// The gate's server keeps the data across a restart but loses the gate.
    GateForgetsOnRestart,
    /// A holder without its commit uses its token before the commit (the largest grant).
    UsedBeforeCommit,
    /// A release overtakes the commit: the token is read after the release went out, and the
    /// nodes that refuse the FENCE because of that release are counted as committed.
    ReleaseOvertakesCommit,
    /// The commit goes to one node only (the one that granted the largest token) and counts.
    CommitToMinority,
    /// A queued (ticketed) grant defers its commit too: it holds on tentative grants, which a
    /// smaller ticket may wound while it believes it holds.
    DeferredTicketedGrant,
    /// Sets: the free members of a set are granted while another member is held.
    PartialSet,
    /// Sets: each key's queue orders a set by its own arrival there (the set is placed in its
    /// members' queues one key at a time, other requests arriving in between).
    PerKeyOrder,
    /// Sets: a set request is shown its members without their queues (it skips the waiters).
    SkipsQueue,
    /// Sets: a wound revokes the victim's entry on the contested member only.
    WoundOneMember,
}

impl Mutant {
    pub const ALL: [Mutant; 18] = [
        Mutant::NoCommit,
        Mutant::FenceWithoutOwnerCheck,
        Mutant::RevokeCommitted,
        Mutant::FifoQueue,
        Mutant::SemaphoreMajority,
        Mutant::ReaderBesideWriter,
        Mutant::ExpiredPermitKept,
        Mutant::UncheckedResource,
        Mutant::GateOneBelow,
        Mutant::GateForgetsOnRestart,
        Mutant::UsedBeforeCommit,
        Mutant::ReleaseOvertakesCommit,
        Mutant::CommitToMinority,
        Mutant::DeferredTicketedGrant,
        Mutant::PartialSet,
        Mutant::PerKeyOrder,
        Mutant::SkipsQueue,
        Mutant::WoundOneMember,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutant::NoCommit => "max token without the commit phase",
            Mutant::FenceWithoutOwnerCheck => "FENCE without the still-held check",
            Mutant::RevokeCommitted => "revoking a committed grant",
            Mutant::FifoQueue => "serving tickets FIFO instead of by ticket",
            Mutant::SemaphoreMajority => "semaphore quorum = simple majority",
            Mutant::ReaderBesideWriter => "shared lock: a reader granted beside a writer",
            Mutant::ExpiredPermitKept => "semaphore: an expired holder keeps its permit",
            Mutant::UncheckedResource => "a resource that does not check tokens (no gate)",
            Mutant::GateOneBelow => "a gate that lets a lower token through",
            Mutant::GateForgetsOnRestart => "a gate that forgets its token on restart",
            Mutant::UsedBeforeCommit => "deferred: a token used before its commit",
            Mutant::ReleaseOvertakesCommit => "deferred: a release that overtakes its commit",
            Mutant::CommitToMinority => "deferred: a commit sent to a minority",
            Mutant::DeferredTicketedGrant => {
                "deferred: a ticketed grant wounded while its owner believes it holds"
            }
            Mutant::PartialSet => "sets: the free members granted while another is held",
            Mutant::PerKeyOrder => "sets: each key's queue orders a set by its own arrival",
            Mutant::SkipsQueue => "sets: a set request that skips a key's queue",
            Mutant::WoundOneMember => "sets: a wound that revokes one member, not the set",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub name: &'static str,
    pub nodes: usize,
    pub clients: usize,
    /// Each client's ticket (smaller is served first).
    pub tickets: Vec<u64>,
    /// Each node's counter at the start (they disagree, as real nodes do).
    pub counters: Vec<u64>,
    pub expiry: Expiry,
    pub crashes: Crashes,
    pub budget: Budget,
    pub mutant: Option<Mutant>,
    /// What each client asks for; empty: the plain lock (every client exclusive).
    pub wants: Vec<Want>,
    /// Every node starts with committed entries of earlier holders that crashed (one per item),
    /// whose leases may end at any moment. Clients then queue behind them, so two clients
    /// suffice to exercise the order in which a queue is served.
    pub earlier: Vec<Want>,
    /// Clients that start in their critical section, each committed on its nodes (what it won
    /// before the run began; its waits on other nodes are never delivered): three holders
    /// with fewer clients moving, which keeps the runs within bounds.
    pub holding_at_start: Vec<(usize, Vec<usize>)>,
    /// Each client writes once, while it holds, to a resource behind a gate.
    pub gate: bool,
    /// Clients that take the lock with one attempt without a wait (`try_lock`): held on plain
    /// grants, their token committed only when read (docs/protocol.md §4.1).
    pub no_wait: Vec<usize>,
    /// Explore every behaviour of at most this many steps (`None`: every behaviour).
    pub max_depth: Option<usize>,
    /// A set run (crate::sets) when not empty: client i asks for the keys `sets[i]` of every
    /// node at once, all or nothing (one member: a single request).
    pub sets: Vec<Vec<Member>>,
    /// Set runs: requests carry the client's ticket (ranked by it, wounding tentative grants);
    /// else they are ranked by arrival (FIFO) and granted committed.
    pub ticketed: bool,
}

/// A member of a set: a key of the node (0 is `a`, 1 `b`, ...) and what is asked of it.
pub type Member = (u8, Want);

impl Config {
    pub fn base(name: &'static str, nodes: usize, clients: usize) -> Config {
        Config {
            name,
            nodes,
            clients,
            // Arrival and ticket order differ: the last client to start has the smallest ticket
            // whenever clients start in index order.
            tickets: (0..clients as u64).map(|i| 30 - 10 * i).collect(),
            // Node 0 ahead of the others, as in the A-at-10 / B,C-at-5 example.
            counters: (0..nodes).map(|i| if i == 0 { 10 } else { 5 }).collect(),
            expiry: Expiry::Never,
            crashes: Crashes::None,
            budget: Budget {
                drops: 0,
                duplicates: 0,
                crashes: 0,
                asks_again: 0,
                expiries: 0,
                gate_restarts: 0,
            },
            mutant: None,
            wants: Vec::new(),
            earlier: Vec::new(),
            holding_at_start: Vec::new(),
            gate: false,
            no_wait: Vec::new(),
            max_depth: None,
            sets: Vec::new(),
            ticketed: true,
        }
    }

    /// A set run: client i asks for `sets[i]` on every node.
    pub fn sets(name: &'static str, nodes: usize, sets: &[&[Member]], ticketed: bool) -> Config {
        Config {
            sets: sets.iter().map(|s| s.to_vec()).collect(),
            ticketed,
            ..Config::base(name, nodes, sets.len())
        }
    }

    /// How many keys a set run's nodes have.
    pub fn keys(&self) -> usize {
        let top = self.sets.iter().flatten().map(|&(k, _)| k as usize + 1);
        top.max().unwrap_or(0)
    }

    /// A run where client i asks for `wants[i]` (shared locks, semaphores).
    pub fn asking(name: &'static str, nodes: usize, wants: &[Want]) -> Config {
        Config {
            wants: wants.to_vec(),
            ..Config::base(name, nodes, wants.len())
        }
    }

    /// What `client` asks for (the plain lock is exclusive).
    pub fn want(&self, client: usize) -> Want {
        self.wants.get(client).copied().unwrap_or_default()
    }

    /// The semaphore's limit in this run (0 when it has none).
    pub fn limit(&self) -> u32 {
        let permit = |w: &Want| match *w {
            Want::Permit { limit } => Some(limit),
            _ => None,
        };
        self.wants
            .iter()
            .chain(&self.earlier)
            .find_map(permit)
            .unwrap_or(0)
    }

    /// How many nodes must commit for `client`: a majority for the lock and its shared side,
    /// more for a semaphore (docs/protocol.md §7). The `SemaphoreMajority` mutant settles for a
    /// majority.
    pub fn needed(&self, client: usize) -> usize {
        match self.want(client) {
            Want::Permit { limit } if self.mutant != Some(Mutant::SemaphoreMajority) => {
                semaphore_quorum(self.nodes, limit)
            }
            _ => quorum(self.nodes),
        }
    }

    pub fn faultless(&self) -> bool {
        self.expiry == Expiry::Never
            && self.crashes == Crashes::None
            && self.budget.drops == 0
            && self.budget.duplicates == 0
    }
}
