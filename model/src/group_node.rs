//! A node's side for resources with several holders (read/write locks, semaphores): every
//! decision is `dlock_core::group`'s, as in the module. The model stores what the module keeps
//! (a list of (owner, mode, token) entries, a tentative mark per entry, the queue) and turns
//! decisions into messages. As in `node.rs`, mutants feed the same rules a different view.

use dlock_core::group::{self, Decision, Entry, Kind, Mode, Release, Serve, Want};
use dlock_core::wait::Request;
use dlock_core::{Fence, Held};

use crate::client;
use crate::config::{Config, Mutant};
use crate::node::SETTINGS;
use crate::system::{owner, Holder, Msg, State, To};

/// The holders the rules are shown, with their indexes in `holders`. The design shows the live
/// ones (an entry whose lease ended is gone). `for_reader`: the view a reader's request gets,
/// without the writer in the `ReaderBesideWriter` mutant.
fn view<'a>(
    config: &Config,
    holders: &'a [Holder],
    for_reader: bool,
) -> (Vec<usize>, Vec<Entry<'a>>) {
    let shown = |h: &Holder| {
        let live = !h.lapsed || config.mutant == Some(Mutant::ExpiredPermitKept);
        let hidden = for_reader
            && h.mode == Mode::Exclusive
            && config.mutant == Some(Mutant::ReaderBesideWriter);
        live && !hidden
    };
    (0..holders.len())
        .filter(|&i| shown(&holders[i]))
        .map(|i| {
            let h = &holders[i];
            let entry = Entry {
                owner: &h.owner,
                mode: h.mode,
                token: h.token,
                holds: 1,
                deadline_ms: u64::MAX,
            };
            (i, entry)
        })
        .unzip()
}

fn kind(config: &Config, live: &[Entry<'_>]) -> Option<Kind> {
    group::kind_of(live, config.limit())
}

pub fn on_message(config: &Config, state: &mut State, node: usize, msg: Msg) {
    match msg {
        Msg::Acquire {
            client,
            round,
            ticket,
        } => acquire(config, state, node, owner(client, round), ticket),
        Msg::Fence {
            client,
            round,
            token,
        } => fence(state, node, (client, round), token),
        Msg::Release { client, round } => {
            release(config, state, node, &owner(client, round));
            hand_off(config, state, node);
        }
        _ => {}
    }
}

/// What `group::decide` says about `who`'s ticketed wait, with wound victims as indexes in
/// `holders`.
fn decide(config: &Config, state: &State, node: usize, who: &[u8], ticket: u64) -> Decision {
    let n = &state.nodes[node];
    let want = config.want(usize::from(who[0]));
    let (at, live) = view(config, &n.holders, want == Want::Shared);
    let req = Request {
        owner: who,
        reentrant: false,
        wait: true,
        ticket: Some(ticket),
        rank: ticket,
    };
    let tentative = |e: &Entry<'_>| {
        let h = n
            .holders
            .iter()
            .find(|h| h.owner[..] == *e.owner && h.mode == e.mode);
        h.and_then(|h| h.tentative)
    };
    match group::decide(
        (kind(config, &live), &live),
        &n.queue,
        &req,
        want,
        tentative,
    ) {
        Decision::Wound { victims } => Decision::Wound {
            victims: victims.iter().map(|&v| at[v]).collect(),
        },
        decision => decision,
    }
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
        Decision::Grant => grant(state, node, who, want.mode(), ticket),
        Decision::Downgrade { token } => {
            state.nodes[node].holders.push(Holder {
                owner: [who[0], who[1]],
                mode: Mode::Shared,
                token,
                tentative: Some(ticket),
                lapsed: false,
            });
            state.send(To::Client(client), Msg::Granted { node, round, token });
        }
        Decision::Renew { token, .. } => {
            state.send(To::Client(client), Msg::Granted { node, round, token })
        }
        Decision::Wound { mut victims } => {
            victims.sort_unstable();
            for v in victims.into_iter().rev() {
                let gone = state.nodes[node].holders.remove(v);
                state.ghost.committed_revoked |= gone.tentative.is_none();
            }
            grant(state, node, who, want.mode(), ticket);
        }
        Decision::Enqueue => {
            let rank = ticket;
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

/// A fresh entry for `who`, tentative for `ticket`.
fn grant(state: &mut State, node: usize, who: Vec<u8>, mode: Mode, ticket: u64) {
    let n = &mut state.nodes[node];
    let Ok(token) = n.node.grant(&SETTINGS) else {
        return;
    };
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    n.holders.push(Holder {
        owner: [who[0], who[1]],
        mode,
        token,
        tentative: Some(ticket),
        lapsed: false,
    });
    state.send(To::Client(client), Msg::Granted { node, round, token });
}

/// FENCE: `Node::fence` on the owner's newest entry; committed, every entry of the owner takes
/// the token and loses its tentative mark.
fn fence(state: &mut State, node: usize, (client, round): (usize, u32), token: u64) {
    let who = owner(client, round);
    let n = &mut state.nodes[node];
    let live: Vec<Entry<'_>> = n.holders.iter().filter(|h| !h.lapsed).map(entry).collect();
    let newest = group::newest_of(&live, &who).map(|e| Held {
        owner: e.owner,
        token: e.token,
        holds: e.holds,
        deadline_ms: e.deadline_ms,
    });
    let ok = match n.node.fence(newest, &who, token) {
        Fence::Fenced { token } => {
            for h in n
                .holders
                .iter_mut()
                .filter(|h| h.owner[..] == who[..] && !h.lapsed)
            {
                h.token = token;
                h.tentative = None;
            }
            true
        }
        Fence::NotHeld | Fence::Lowers { .. } | Fence::TooFarAhead { .. } => false,
    };
    state.send(To::Client(client), Msg::Fenced { node, round, ok });
}

fn entry(h: &Holder) -> Entry<'_> {
    Entry {
        owner: &h.owner,
        mode: h.mode,
        token: h.token,
        holds: 1,
        deadline_ms: u64::MAX,
    }
}

/// RELEASE: one hold of `who` (`group::release`), and its queued wait withdrawn.
fn release(config: &Config, state: &mut State, node: usize, who: &[u8]) {
    let n = &mut state.nodes[node];
    let (at, live) = view(config, &n.holders, false);
    if let Release::Removed { at: i } = group::release(&live, who) {
        n.holders.remove(at[i]);
    }
    n.queue.remove_owner(who);
}

/// A place may have freed up: serve the head of the queue while `group::serve_head` says so
/// (consecutive readers together, a semaphore's places in order).
pub fn hand_off(config: &Config, state: &mut State, node: usize) {
    while !state.nodes[node].quarantined {
        let n = &state.nodes[node];
        let Some(head) = n.queue.head() else {
            return;
        };
        let (who, want) = (head.owner.clone(), head.want);
        let (_, live) = view(config, &n.holders, want == Want::Shared);
        let serve = group::serve_head(kind(config, &live), &live, &who, want);
        let smallest = n.queue.iter().map(|w| ticket_of(state, &w.owner)).min();
        let (client, round) = (usize::from(who[0]), u32::from(who[1]));
        match serve {
            Serve::Wait => return,
            Serve::WrongKind { .. } => {
                state.nodes[node].queue.pop();
                state.send(To::Client(client), Msg::Unavailable { node, round });
            }
            Serve::Grant { .. } => {
                state.nodes[node].queue.pop();
                let ticket = ticket_of(state, &who);
                if smallest.is_some_and(|s| s < ticket) {
                    state.ghost.served_out_of_order = true;
                }
                grant(state, node, who, want.mode(), ticket);
            }
        }
    }
}

fn ticket_of(state: &State, who: &[u8]) -> u64 {
    state.clients[usize::from(who[0])].ticket
}

/// The lease of holder `at` ended on `node`: the design drops the entry (the module no longer
/// counts it); a committed one ending before its owner holds means the commit round outlasted
/// the TTL, as for the lock.
pub fn expire(config: &Config, state: &mut State, node: usize, at: usize) {
    let h = state.nodes[node].holders[at].clone();
    if h.owner[0] != crate::system::EARLIER_HOLDER {
        state.budget.expiries -= 1;
    }
    if h.tentative.is_none() {
        client::outlive(state, &h.owner);
    }
    let holders = &mut state.nodes[node].holders;
    holders[at].lapsed = true;
    holders.retain(|h| !h.lapsed || config.mutant == Some(Mutant::ExpiredPermitKept));
    hand_off(config, state, node);
}

#[cfg(test)]
#[path = "group_node_tests.rs"]
mod tests;
