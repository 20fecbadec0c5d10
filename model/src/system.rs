//! The modelled system: N nodes and M clients exchanging messages over a network that may
//! delay, reorder, duplicate and lose them; nodes that crash and restart; locks that expire.
//! Every step is one [`Action`]; the checker explores every interleaving within the budgets.

use std::collections::BTreeMap;

use dlock_client::acquisition::Acquisition;
use dlock_client::commit::Commit;
use dlock_core::queue::Queue;
use dlock_core::{Clock, Mode, Node, Settings};

use crate::config::{Budget, Config};

/// Time does not exist in the model: tokens come from counters alone (no clock floor), and
/// expiry and quarantine are events guarded by what they assume.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NoClock;

impl Clock for NoClock {
    fn now_us(&self) -> u64 {
        0
    }
    fn monotonic_ms(&self) -> u64 {
        0
    }
}

/// The two connections a client keeps to each node: one for its blocking wait, one for
/// everything else. Each is FIFO (TCP); the two, and different nodes and clients, are not
/// ordered with each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Chan {
    Wait,
    Command,
}

/// Who a message goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum To {
    Node(usize),
    Client(usize),
    /// The gate's server.
    Gate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// `DLOCK.ACQUIRE key <client:round> ttl WAIT 0 TICKET ticket`.
    Acquire {
        client: usize,
        round: u32,
        ticket: u64,
    },
    /// `DLOCK.ACQUIRE key <client:round> ttl`: one attempt without a wait or a ticket (a plain
    /// grant, which no ticket can wound).
    Try { client: usize, round: u32 },
    /// `DLOCK.FENCE key <client:round> token`.
    Fence {
        client: usize,
        round: u32,
        token: u64,
    },
    /// `DLOCK.RELEASE key <client:round>`.
    Release { client: usize, round: u32 },
    /// Sets, the `PerKeyOrder` mutant only: the node places a waiting set in the queue of its
    /// member `member`, as a later arrival of its own there.
    Place {
        client: usize,
        round: u32,
        member: u8,
    },
    /// A wait answered with a token.
    Granted { node: usize, round: u32, token: u64 },
    /// A wait ended without a grant (the node restarted under it).
    Unavailable { node: usize, round: u32 },
    /// A FENCE answered (1, or 0 / an error).
    Fenced { node: usize, round: u32, ok: bool },
    /// `DLOCK.GUARD gate token ...`: a holder's write, under its token.
    Write { client: usize, token: u64 },
}

/// Tokens come from counters alone: no clock floor, no quarantine timer (the quarantine is an
/// event of its own).
pub const SETTINGS: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: false,
};

/// The owner byte of the earlier holders a run may start with (see `Config::earlier`).
pub const EARLIER_HOLDER: u8 = u8::MAX;

/// The owner string of a client's round, as the node stores it.
pub fn owner(client: usize, round: u32) -> Vec<u8> {
    vec![client as u8, round as u8]
}

/// One holder of a resource, as the module stores it (a plain lock has one exclusive holder).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Holder {
    /// `client:round` as [`owner`] spells it, kept inline: states are cloned at every step.
    pub owner: [u8; 2],
    pub mode: Mode,
    pub token: u64,
    /// The ticket of an uncommitted grant (module memory, what wound-wait reads); `None` once
    /// FENCE committed it.
    pub tentative: Option<u64>,
    /// Its lease ended. The module stops counting such an entry at once, so the design drops
    /// it; only the `ExpiredPermitKept` mutant keeps it (and shows it to the rules).
    pub lapsed: bool,
}

impl Holder {
    /// A committed holder whose lease has not ended.
    pub fn committed(owner: [u8; 2], mode: Mode, token: u64) -> Holder {
        Holder {
            owner,
            mode,
            token,
            tentative: None,
            lapsed: false,
        }
    }
}

/// One node's key: the module's state for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeState {
    pub up: bool,
    pub node: Node<NoClock>,
    /// The holders, in grant order (hold counts are always 1 here; leases end by the expiry
    /// action).
    pub holders: Vec<Holder>,
    pub queue: Queue<()>,
    pub quarantined: bool,
    /// Ghost: the owners of the committed holds this node forgot when it lost its state (what
    /// the quarantine has to outlast).
    pub forgotten: Vec<[u8; 2]>,
    /// Ghost: the largest counter this node ever had (for the clock floor).
    pub highest_counter: u64,
    /// Set runs (crate::sets): the node's keys, each with its holders and queue (the fields
    /// above then stay empty); empty in every other run.
    pub keys: Vec<Key>,
    /// Set runs: the node-wide arrival number the next waiter takes (in every queue it joins).
    pub arrivals: u64,
}

/// One key of a set run's node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Key {
    pub holders: Vec<Holder>,
    pub queue: Queue<()>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    Acquiring,
    /// In the critical section, holding `token`.
    Holding,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientState {
    pub phase: Phase,
    pub ticket: u64,
    pub acquisition: Option<Acquisition>,
    /// Ghost: the grant tokens of the current round, per node (kept by the model because the
    /// unfenced mutant bypasses the acquisition's commit).
    pub grants: Vec<Option<u64>>,
    /// Ghost: a committed lock of the current round expired (or a quarantine outlasted it)
    /// while the client was still committing. Under the timing assumptions the commit round
    /// then outlasted the TTL, and the client's validity check (time since the commit round
    /// began, against the TTL the FENCE set) refuses to call it held.
    pub outlived_ttl: bool,
    /// It sent its write (runs with a gate).
    pub wrote: bool,
    /// Held without its commit (an attempt without a wait): the token and the nodes that
    /// granted it, until the token is read (docs/protocol.md §4.1).
    pub owed: Option<(u64, Vec<usize>)>,
    /// The commit of a token being read, in flight.
    pub commit: Option<Commit>,
    /// Its token was read: committed on a quorum, now usable (recorded in `Ghost::holds`).
    pub used: bool,
}

/// One token used (a queued acquisition's, or a deferred commit's once it committed), for the
/// token-order property: its token and, per node it held,
/// the token that node granted it (node tokens increase, so they give the order of grants).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hold {
    pub client: usize,
    /// Exclusive for the plain lock: token order is claimed for holds that exclude each other.
    pub mode: Mode,
    pub token: u64,
    pub granted: Vec<(usize, u64)>,
}

/// Facts the properties check, recorded as the system runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    pub holds: Vec<Hold>,
    pub committed_revoked: bool,
    pub served_out_of_order: bool,
    pub extra_rounds: Vec<u32>,
    /// Sets: a request was granted a key while a waiter ranked ahead of it was queued there.
    pub set_overtaken: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub nodes: Vec<NodeState>,
    pub clients: Vec<ClientState>,
    /// Requests in flight, per connection (node, client, channel), oldest first.
    pub net: BTreeMap<(usize, usize, Chan), Vec<Msg>>,
    /// Replies sent in this step, not yet read (always empty between steps).
    pub inbox: Vec<(usize, Msg)>,
    pub ghost: Ghost,
    /// What the holders write to (runs with a gate).
    pub resource: Resource,
    /// What is left of the run's fault budget.
    pub budget: Budget,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    Start(usize),
    /// The oldest request on a connection reaches its node.
    Deliver(usize, usize, Chan),
    /// The connection broke and the oldest request was lost.
    Drop(usize, usize, Chan),
    /// The oldest request is sent again (a client retrying a call).
    Duplicate(usize, usize, Chan),
    /// The lease of a node's holder (its index) ran out.
    Expire(usize, usize),
    Crash(usize),
    Restart(usize),
    QuarantineEnds(usize),
    /// A client's call timed out: it sends its pending waits again.
    AskAgain(usize),
    /// The critical section ends: release everywhere.
    Finish(usize),
    /// A holder without its commit reads its token: the commit goes out.
    Use(usize),
    /// A holder sends its write through the gate.
    Write(usize),
    /// The gate's server restarts.
    GateRestart,
}

/// The committed entries of `config.earlier` (owners `EARLIER_HOLDER:i`), granted in order.
fn earlier_holders(config: &Config, node: &mut Node<NoClock>) -> Vec<Holder> {
    let mut holders = Vec::new();
    for (i, want) in config.earlier.iter().enumerate() {
        let Ok(token) = node.grant(&SETTINGS) else {
            continue;
        };
        holders.push(Holder::committed(
            [EARLIER_HOLDER, i as u8],
            want.mode(),
            token,
        ));
    }
    holders
}

impl State {
    /// The nodes (with `config.earlier`'s holders) and the clients before anything happens;
    /// the clients holding from the start are `client::start_holding`'s.
    pub fn initial(config: &Config) -> State {
        let nodes = (0..config.nodes)
            .map(|i| {
                let mut node = Node::new(NoClock);
                node.raise_counter(config.counters.get(i).copied().unwrap_or(0));
                let holders = earlier_holders(config, &mut node);
                NodeState {
                    up: true,
                    highest_counter: node.counter(),
                    node,
                    holders,
                    queue: Queue::default(),
                    quarantined: false,
                    forgotten: Vec::new(),
                    keys: vec![Key::default(); config.keys()],
                    arrivals: 0,
                }
            })
            .collect();
        let clients = (0..config.clients)
            .map(|i| ClientState {
                phase: Phase::Idle,
                ticket: config.tickets[i],
                acquisition: None,
                grants: vec![None; config.nodes],
                outlived_ttl: false,
                wrote: false,
                owed: None,
                commit: None,
                used: false,
            })
            .collect();
        State {
            nodes,
            clients,
            net: BTreeMap::new(),
            inbox: Vec::new(),
            ghost: Ghost::default(),
            resource: Resource::default(),
            budget: config.budget.clone(),
        }
    }

    /// A committed hold of `owner` ended on a node (its lease, or a quarantine outlasted it):
    /// if that owner's round is still being acquired, the round has outlived the TTL (see
    /// [`ClientState::outlived_ttl`]).
    pub fn outlive(&mut self, owner: &[u8]) {
        let Some(c) = self.clients.get_mut(usize::from(owner[0])) else {
            return; // an earlier holder
        };
        let round = c.acquisition.as_ref().map(Acquisition::round);
        if c.phase == Phase::Acquiring && round == Some(u32::from(owner[1])) {
            c.outlived_ttl = true;
        }
    }

    /// A request goes onto the network; a reply goes to the client's inbox, read in the same
    /// step (see the module docs of `model`).
    pub fn send(&mut self, to: To, msg: Msg) {
        let (node, client, chan) = match (to, msg) {
            (To::Client(client), _) => return self.inbox.push((client, msg)),
            (To::Gate, Msg::Write { client, .. }) => (GATE, client, Chan::Command),
            (To::Node(node), Msg::Acquire { client, .. } | Msg::Place { client, .. }) => {
                (node, client, Chan::Wait)
            }
            (
                To::Node(node),
                Msg::Fence { client, .. } | Msg::Release { client, .. } | Msg::Try { client, .. },
            ) => (node, client, Chan::Command),
            (To::Node(_) | To::Gate, _) => return,
        };
        self.net.entry((node, client, chan)).or_default().push(msg);
    }

    /// `client`'s critical section is over (or its commit failed): release on every node.
    pub fn finish(&mut self, nodes: usize, client: usize) {
        let c = &mut self.clients[client];
        c.phase = Phase::Done;
        let round = c.acquisition.as_ref().map_or(0, Acquisition::round);
        for node in 0..nodes {
            self.send(To::Node(node), Msg::Release { client, round });
        }
    }

    /// `DLOCK.FENCE` of `token` as `client`'s owner of `round`, to each of `nodes`.
    pub fn fence(&mut self, client: usize, round: u32, token: u64, nodes: Vec<usize>) {
        for node in nodes {
            self.send(
                To::Node(node),
                Msg::Fence {
                    client,
                    round,
                    token,
                },
            );
        }
    }

    /// Takes the oldest request off a connection.
    pub fn take(&mut self, key: (usize, usize, Chan)) -> Option<Msg> {
        let queue = self.net.get_mut(&key)?;
        let msg = queue.remove(0);
        if queue.is_empty() {
            self.net.remove(&key);
        }
        Some(msg)
    }
}

/// The network address of the gate's server (beside the lock nodes, `0..nodes`).
pub const GATE: usize = usize::MAX;

/// The resource behind a gate (crate::gate acts on it): the gate, and (ghost) the newest write that landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    pub gate: Option<u64>,
    /// Ghost: the client and token of the highest write that landed.
    pub newest: Option<(usize, u64)>,
    /// Ghost: a write landed under a token below one already written, or equal to another
    /// holder's.
    pub stale_write: bool,
}
