//! A node's side of the protocol: every decision is `dlock_core::rules`', as in the module, for
//! every kind of resource (a plain lock is one exclusive holder). The model only stores what the
//! module keeps — the holders in the keyspace; the queue and the tentative marks in module
//! memory — and turns decisions into messages. Mutants are made by feeding the same rules a
//! different view, never by changing them.

use dlock_core::holders::{Holder as Entry, List, Mode, Want};
use dlock_core::queue::Request;
use dlock_core::rules::{self, Decision, Release, Serve, Victim};
use dlock_core::tentative::Tentatives;
use dlock_core::Fence;

use crate::config::{Config, Mutant};
use crate::system::{owner, Holder, Msg, State, To, SETTINGS};

/// What the rules are shown of a node's holders: the entries (with their indexes in
/// `holders`) and the tentative marks. The design shows the live entries; the mutants show
/// another picture.
struct View<'a> {
    at: Vec<usize>,
    entries: Vec<Entry<'a>>,
    marks: Tentatives,
}

impl<'a> View<'a> {
    /// `asking`: the mode of the request the view is for, if any.
    fn of(config: &Config, holders: &'a [Holder], asking: Option<Mode>) -> View<'a> {
        let mutant = config.mutant;
        let shown = |h: &Holder| {
            let live = !h.lapsed || mutant == Some(Mutant::ExpiredPermitKept);
            let hidden = asking == Some(Mode::Shared)
                && h.mode == Mode::Exclusive
                && mutant == Some(Mutant::ReaderBesideWriter);
            live && !hidden
        };
        let mut view = View {
            at: Vec::new(),
            entries: Vec::new(),
            marks: Tentatives::default(),
        };
        for (i, h) in holders.iter().enumerate().filter(|(_, h)| shown(h)) {
            view.at.push(i);
            view.entries.push(entry(h));
            // The RevokeCommitted mutant shows a committed grant as tentative for any ticket.
            let ticket = match (h.tentative, mutant) {
                (None, Some(Mutant::RevokeCommitted)) => Some(u64::MAX),
                (ticket, _) => ticket,
            };
            if let Some(ticket) = ticket {
                view.marks.mark(&h.owner, h.token, ticket);
            }
        }
        view
    }

    fn holders(&self, config: &Config) -> List<'_> {
        List {
            holders: &self.entries,
            limit: config.limit(),
            now_ms: 0,
        }
    }

    /// The index in `holders` of a wound's victim.
    fn index_of(&self, victim: &Victim) -> Option<usize> {
        let found = self
            .entries
            .iter()
            .position(|e| e.owner == victim.owner.as_slice() && e.mode == victim.mode);
        found.map(|i| self.at[i])
    }
}

/// A live entry: leases are the expiry action's business, so the rules see no deadline.
fn entry(h: &Holder) -> Entry<'_> {
    Entry {
        owner: &h.owner,
        mode: h.mode,
        token: h.token,
        holds: 1,
        deadline_ms: u64::MAX,
    }
}

pub fn on_message(config: &Config, state: &mut State, node: usize, msg: Msg) {
    match msg {
        Msg::Acquire {
            client,
            round,
            ticket,
        } => acquire(config, state, node, owner(client, round), ticket),
        Msg::Try { client, round } => try_acquire(config, state, node, owner(client, round)),
        Msg::Fence {
            client,
            round,
            token,
        } => fence(config, state, node, (client, round), token),
        Msg::Release { client, round } => {
            release(config, state, node, &owner(client, round));
            hand_off(config, state, node);
        }
        _ => {}
    }
}

/// What `rules::decide` says about `who`'s ticketed wait, with wound victims as indexes in
/// `holders`.
fn decide(config: &Config, state: &State, node: usize, who: &[u8], ticket: u64) -> Decision {
    let n = &state.nodes[node];
    let want = config.want(usize::from(who[0]));
    let view = View::of(config, &n.holders, Some(want.mode()));
    let req = Request {
        owner: who,
        want,
        reentrant: false,
        wait: true,
        ticket: Some(ticket),
        rank: ticket,
    };
    rules::decide(&view.holders(config), &view.marks, &n.queue, &req)
}

fn acquire(config: &Config, state: &mut State, node: usize, who: Vec<u8>, ticket: u64) {
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    let want = config.want(client);
    let mut decision = decide(config, state, node, &who, ticket);
    let grants = matches!(
        decision,
        Decision::Grant | Decision::Downgrade { .. } | Decision::Wound { .. }
    );
    if state.nodes[node].quarantined && grants {
        decision = Decision::Enqueue; // waits until the quarantine ends
    }
    match decision {
        Decision::Grant => grant(state, node, &who, want.mode(), (ticket, None)),
        Decision::Downgrade { token } => {
            grant(state, node, &who, Mode::Shared, (ticket, Some(token)))
        }
        Decision::Renew { token, .. } => {
            state.send(To::Client(client), Msg::Granted { node, round, token })
        }
        Decision::Wound { victims } => {
            wound(config, state, node, &victims);
            grant(state, node, &who, want.mode(), (ticket, None));
        }
        Decision::Enqueue => {
            // The FIFO mutant ranks by arrival: every waiter gets the same rank.
            let rank = match config.mutant {
                Some(Mutant::FifoQueue) => 0,
                _ => ticket,
            };
            let queue = &mut state.nodes[node].queue;
            queue.push(&who, rank, true, (0, want), ());
        }
        // Another kind while held: the error ends the wait.
        Decision::WrongKind { .. } => {
            state.send(To::Client(client), Msg::Unavailable { node, round })
        }
        Decision::Contended | Decision::UpgradeRefused | Decision::HoldLimit => {}
    }
}

/// A plain ACQUIRE (no wait, no ticket): granted as a committed entry, which no ticket can
/// wound, or answered nil (`Unavailable`): held, someone queued first, or quarantined.
fn try_acquire(config: &Config, state: &mut State, node: usize, who: Vec<u8>) {
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    let want = config.want(client);
    let n = &state.nodes[node];
    let view = View::of(config, &n.holders, Some(want.mode()));
    let req = Request {
        owner: &who,
        want,
        reentrant: false,
        wait: false,
        ticket: None,
        rank: u64::MAX,
    };
    let decision = rules::decide(&view.holders(config), &view.marks, &n.queue, &req);
    drop(view);
    let token = match decision {
        Decision::Grant if !state.nodes[node].quarantined => {
            state.nodes[node].node.grant(&SETTINGS)
        }
        Decision::Renew { token, .. } => Ok(token),
        _ => return state.send(To::Client(client), Msg::Unavailable { node, round }),
    };
    let Ok(token) = token else {
        return state.send(To::Client(client), Msg::Unavailable { node, round });
    };
    if !matches!(decision, Decision::Renew { .. }) {
        let holder = Holder::committed([who[0], who[1]], want.mode(), token);
        state.nodes[node].holders.push(holder);
    }
    state.send(To::Client(client), Msg::Granted { node, round, token });
}

/// Revokes the victims' entries; revoking a committed one is what `NEVER_REVOKED` forbids.
fn wound(config: &Config, state: &mut State, node: usize, victims: &[Victim]) {
    let holders = &state.nodes[node].holders;
    let view = View::of(config, holders, None);
    let mut gone: Vec<usize> = victims.iter().filter_map(|v| view.index_of(v)).collect();
    gone.sort_unstable();
    for i in gone.into_iter().rev() {
        let revoked = state.nodes[node].holders.remove(i);
        state.ghost.committed_revoked |= revoked.tentative.is_none();
    }
}

/// A fresh entry for `who` (or, for a downgrade, a shared entry with its exclusive token),
/// tentative for `ticket`.
fn grant(state: &mut State, node: usize, who: &[u8], mode: Mode, how: (u64, Option<u64>)) {
    let (ticket, downgrade) = how;
    let n = &mut state.nodes[node];
    let token = match downgrade {
        Some(token) => token,
        None => match n.node.grant(&SETTINGS) {
            Ok(token) => token,
            Err(_) => return,
        },
    };
    n.holders.push(Holder {
        owner: [who[0], who[1]],
        mode,
        token,
        tentative: Some(ticket),
        lapsed: false,
    });
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    state.send(To::Client(client), Msg::Granted { node, round, token });
}

/// FENCE: `Node::fence` on the owner's newest entry; committed, every entry of the owner takes
/// the token and loses its tentative mark. The `FenceWithoutOwnerCheck` mutant shows the rules
/// the requester as the holder of the lock, whoever holds it.
fn fence(
    config: &Config,
    state: &mut State,
    node: usize,
    (client, round): (usize, u32),
    token: u64,
) {
    let who = owner(client, round);
    let n = &mut state.nodes[node];
    let view = View::of(config, &n.holders, None);
    let holders = view.holders(config);
    let mut newest = dlock_core::Holders::mine(&holders, &who).newest();
    if config.mutant == Some(Mutant::FenceWithoutOwnerCheck) {
        let current = view.entries.iter().map(|e| e.token).max().unwrap_or(0);
        newest = newest.or(Some(Entry {
            owner: &who,
            mode: Mode::Exclusive,
            token: current,
            holds: 1,
            deadline_ms: u64::MAX,
        }));
    }
    let fenced = n.node.fence(newest, &who, token);
    drop(view);
    let ok = match fenced {
        Fence::Fenced { token } => {
            commit(n, &who, config.want(client), token);
            true
        }
        Fence::NotHeld | Fence::Lowers { .. } | Fence::TooFarAhead { .. } => false,
    };
    state.send(To::Client(client), Msg::Fenced { node, round, ok });
}

/// The owner's live entries take `token` and are committed (a mutant's FENCE may commit an
/// owner that holds nothing: it becomes a holder).
fn commit(n: &mut crate::system::NodeState, who: &[u8], want: Want, token: u64) {
    let mine = |h: &&mut Holder| h.owner[..] == *who && !h.lapsed;
    let mut any = false;
    for h in n.holders.iter_mut().filter(mine) {
        h.token = token;
        h.tentative = None;
        any = true;
    }
    if !any {
        let holder = Holder::committed([who[0], who[1]], want.mode(), token);
        n.holders.push(holder);
    }
}

/// RELEASE: one hold of `who` (`rules::release`), and its queued wait withdrawn.
fn release(config: &Config, state: &mut State, node: usize, who: &[u8]) {
    let n = &mut state.nodes[node];
    let view = View::of(config, &n.holders, None);
    let gone = match rules::release(&view.holders(config), who) {
        Release::Removed { mode, .. } => view.index_of(&Victim {
            owner: who.to_vec(),
            mode,
        }),
        Release::Decremented { .. } | Release::NotHeld => None,
    };
    drop(view);
    if let Some(i) = gone {
        n.holders.remove(i);
    }
    n.queue.remove_owner(who);
}

/// A place may have freed up: serve the head of the queue while `rules::serve_head` says so
/// (a free lock to one writer, consecutive readers together, a semaphore's places in order).
pub fn hand_off(config: &Config, state: &mut State, node: usize) {
    while !state.nodes[node].quarantined {
        let n = &state.nodes[node];
        let Some(head) = n.queue.head() else {
            return;
        };
        let (who, want) = (head.owner.clone(), head.want);
        let view = View::of(config, &n.holders, Some(want.mode()));
        let serve = rules::serve_head(&view.holders(config), &who, want);
        let smallest = n.queue.iter().map(|w| ticket_of(state, &w.owner)).min();
        let (client, round) = (usize::from(who[0]), u32::from(who[1]));
        match serve {
            Serve::Wait => return,
            Serve::WrongKind { .. } => {
                state.nodes[node].queue.pop();
                state.send(To::Client(client), Msg::Unavailable { node, round });
            }
            Serve::Grant { downgrade } => {
                state.nodes[node].queue.pop();
                let ticket = ticket_of(state, &who);
                if smallest.is_some_and(|s| s < ticket) {
                    state.ghost.served_out_of_order = true;
                }
                let mode = match downgrade {
                    Some(_) => Mode::Shared,
                    None => want.mode(),
                };
                grant(state, node, &who, mode, (ticket, downgrade));
            }
        }
    }
}

fn ticket_of(state: &State, who: &[u8]) -> u64 {
    state.clients[usize::from(who[0])].ticket
}

/// The lease of holder `at` ended on `node`: the design drops the entry (the module no longer
/// counts it). A tentative grant that ends is refused by its FENCE; a committed one ending
/// before its owner holds means the commit round outlasted the TTL.
pub fn expire(config: &Config, state: &mut State, node: usize, at: usize) {
    let h = state.nodes[node].holders[at].clone();
    if h.owner[0] != crate::system::EARLIER_HOLDER {
        state.budget.expiries -= 1;
    }
    if h.tentative.is_none() {
        state.outlive(&h.owner);
    }
    let holders = &mut state.nodes[node].holders;
    holders[at].lapsed = true;
    holders.retain(|h| !h.lapsed || config.mutant == Some(Mutant::ExpiredPermitKept));
    hand_off(config, state, node);
}

/// A crash: the process is gone, with its waiters' connections (they learn their wait ended)
/// and its module memory (tentative marks: a restarted grant counts as committed).
pub fn crash(config: &Config, state: &mut State, node: usize) {
    let n = &mut state.nodes[node];
    n.up = false;
    if let crate::config::Crashes::LoseState { quarantine: true } = config.crashes {
        // What the quarantine has to outlast: the committed holds the node forgets.
        let committed = n
            .holders
            .iter()
            .filter(|h| h.tentative.is_none() && !h.lapsed);
        n.forgotten.extend(committed.map(|h| h.owner));
    }
    let waiters: Vec<Vec<u8>> = n.queue.iter().map(|w| w.owner.clone()).collect();
    n.queue = Default::default();
    for h in &mut n.holders {
        h.tentative = None;
    }
    for who in waiters {
        let (client, round) = (usize::from(who[0]), u32::from(who[1]));
        state.send(To::Client(client), Msg::Unavailable { node, round });
    }
}

pub fn restart(config: &Config, state: &mut State, node: usize) {
    let n = &mut state.nodes[node];
    n.up = true;
    if let crate::config::Crashes::LoseState { quarantine } = config.crashes {
        n.holders.clear();
        let mut fresh = dlock_core::Node::new(crate::system::NoClock);
        fresh.raise_counter(n.highest_counter); // the clock floor
        n.node = fresh;
        n.quarantined = quarantine;
    }
}

/// The quarantine lasted a TTL: every lock granted before the loss is over, and waiters may be
/// served.
pub fn quarantine_ends(config: &Config, state: &mut State, node: usize) {
    state.nodes[node].quarantined = false;
    for owner in std::mem::take(&mut state.nodes[node].forgotten) {
        state.outlive(&owner);
    }
    hand_off(config, state, node);
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
