//! A node's side of set requests (docs/protocol/model-check.md §6.7): several keys of one node
//! taken by one owner all or nothing, with one token. Every decision is `dlock_core`'s, as in the
//! module: `rules::decide` per member combined by `sets::decide_set`, `rules::serve_head` per
//! member combined by `sets::serve_set` at a handoff, `Queue::push_at` with one node-wide arrival
//! number for every queue a set joins. The client side is the plain lock's (`crate::client`): its
//! ACQUIRE, FENCE and RELEASE stand for the set's ACQUIRE, FENCEALL and RELEASEALL. Mutants feed
//! the same rules another view, or place a set otherwise.

use std::collections::BTreeMap;

use dlock_core::holders::{Holder as Entry, List, Want};
use dlock_core::queue::{Queue, Request};
use dlock_core::rules::{self, Decision, Victim};
use dlock_core::sets::{decide_set, serve_set, SetDecision, SetServe};
use dlock_core::tentative::Tentatives;
use dlock_core::Fence;

use crate::config::{Config, Member, Mutant};
use crate::system::{owner, Holder, Key, Msg, NodeState, State, To, SETTINGS};

pub fn on_message(config: &Config, state: &mut State, node: usize, msg: Msg) {
    match msg {
        Msg::Acquire {
            client,
            round,
            ticket,
        } => acquire(config, state, node, &owner(client, round), ticket),
        Msg::Place {
            client,
            round,
            member,
        } => place(config, state, node, &owner(client, round), member),
        Msg::Fence {
            client,
            round,
            token,
        } => fence_all(config, state, node, &owner(client, round), token),
        Msg::Release { client, round } => {
            let who = owner(client, round);
            let freed = give_back(state, node, &who);
            for key in members(config, &who).iter().map(|&(k, _)| k).chain(freed) {
                withdraw(state, node, key, &who);
                hand_off(config, state, node, key);
            }
        }
        _ => {}
    }
}

/// The set `who`'s client asks for.
fn members<'a>(config: &'a Config, who: &[u8]) -> &'a [Member] {
    &config.sets[usize::from(who[0])]
}

/// The service rank: the ticket, or (FIFO) the same rank for all, ties broken by arrival.
fn rank(config: &Config, ticket: u64) -> u64 {
    if config.ticketed {
        ticket
    } else {
        0
    }
}

/// A key's live entries and tentative marks, as the rules see them.
fn view(holders: &[Holder]) -> (Vec<Entry<'_>>, Tentatives) {
    let mut marks = Tentatives::default();
    let entries = holders
        .iter()
        .map(|h| {
            if let Some(ticket) = h.tentative {
                marks.mark(&h.owner, h.token, ticket);
            }
            Entry {
                owner: &h.owner,
                mode: h.mode,
                token: h.token,
                holds: 1,
                deadline_ms: u64::MAX,
            }
        })
        .collect();
    (entries, marks)
}

fn list<'a>(entries: &'a [Entry<'a>]) -> List<'a> {
    List {
        holders: entries,
        limit: 0,
        now_ms: 0,
    }
}

/// `rules::decide` on each member for `who`'s set ACQUIRE with WAIT. The `SkipsQueue` mutant
/// shows a set (two members or more) empty queues.
fn decisions(config: &Config, n: &NodeState, who: &[u8], ticket: u64) -> Vec<Decision> {
    let set = members(config, who);
    let skips = config.mutant == Some(Mutant::SkipsQueue) && set.len() > 1;
    let nobody = Queue::new();
    set.iter()
        .map(|&(k, want)| {
            let key = &n.keys[usize::from(k)];
            let (entries, marks) = view(&key.holders);
            let queue = if skips { &nobody } else { &key.queue };
            let req = Request {
                owner: who,
                want,
                reentrant: false,
                wait: true,
                ticket: config.ticketed.then_some(ticket),
                rank: rank(config, ticket),
            };
            rules::decide(&list(&entries), &marks, queue, &req)
        })
        .collect()
}

fn acquire(config: &Config, state: &mut State, node: usize, who: &[u8], ticket: u64) {
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    let decided = decisions(config, &state.nodes[node], who, ticket);
    match decide_set(&decided) {
        SetDecision::Grant => grant(config, state, node, who, ticket),
        SetDecision::Renew { token } => {
            state.send(To::Client(client), Msg::Granted { node, round, token })
        }
        SetDecision::Wound { victims } => {
            let freed = wound(config, state, node, who, &victims);
            grant(config, state, node, who, ticket);
            for key in freed {
                hand_off(config, state, node, key);
            }
        }
        SetDecision::Enqueue => {
            if config.mutant == Some(Mutant::PartialSet) {
                grant_free(config, state, node, who, (ticket, &decided));
            }
            enqueue(config, state, node, who, ticket);
        }
        SetDecision::Refused { .. } => {
            state.send(To::Client(client), Msg::Unavailable { node, round })
        }
        SetDecision::Contended => {}
    }
}

/// Queues `who` on every member at once, with one node-wide arrival number. The `PerKeyOrder`
/// mutant places it in its first member's queue only, numbered by that queue; the others
/// follow one `Place` at a time, each a later arrival of that key's own.
fn enqueue(config: &Config, state: &mut State, node: usize, who: &[u8], ticket: u64) {
    let set = members(config, who);
    let rank = rank(config, ticket);
    let n = &mut state.nodes[node];
    if config.mutant == Some(Mutant::PerKeyOrder) {
        let (k, want) = set[0];
        n.keys[usize::from(k)]
            .queue
            .push(who, rank, config.ticketed, (0, want), ());
        return place_next(state, node, who, 1, set.len());
    }
    let seq = n.arrivals;
    n.arrivals += 1;
    for &(k, want) in set {
        let queue = &mut n.keys[usize::from(k)].queue;
        queue.push_at(who, (rank, seq), config.ticketed, (0, want), ());
    }
}

fn place_next(state: &mut State, node: usize, who: &[u8], member: usize, len: usize) {
    let (client, round, member) = (usize::from(who[0]), u32::from(who[1]), member as u8);
    if usize::from(member) < len {
        state.send(
            To::Node(node),
            Msg::Place {
                client,
                round,
                member,
            },
        );
    }
}

/// The `PerKeyOrder` mutant's placement of a waiting set in one more member's queue.
fn place(config: &Config, state: &mut State, node: usize, who: &[u8], member: u8) {
    let set = members(config, who);
    let n = &mut state.nodes[node];
    let first = &n.keys[usize::from(set[0].0)].queue;
    let Some((rank, _)) = first.place_of(who) else {
        return; // no longer waiting
    };
    let (k, want) = set[usize::from(member)];
    let queue = &mut n.keys[usize::from(k)].queue;
    queue.push(who, rank, config.ticketed, (0, want), ());
    place_next(state, node, who, usize::from(member) + 1, set.len());
    hand_off(config, state, node, k); // placed everywhere, it may be served now
}

/// `who`'s place in a queue, or after everyone there when it is not queued (a newcomer).
fn place_in(queue: &Queue<()>, who: &[u8], rank: u64) -> (u64, u64) {
    queue.place_of(who).unwrap_or((rank, u64::MAX))
}

/// Grants `who` every member of its set with one token, tentative for `ticket` when ticketed,
/// and withdraws its waits. Ghost: a waiter ranked ahead of it on a member (fairness).
fn grant(config: &Config, state: &mut State, node: usize, who: &[u8], ticket: u64) {
    let set = members(config, who);
    let n = &mut state.nodes[node];
    let Ok(token) = n.node.grant(&SETTINGS) else {
        return;
    };
    let mut overtaken = false;
    for &(k, want) in set {
        let key = &mut n.keys[usize::from(k)];
        let mine = place_in(&key.queue, who, rank(config, ticket));
        overtaken |= key.queue.iter().any(|w| (w.rank, w.seq) < mine);
        key.queue.remove_owner(who);
        key.holders.push(holder(config, who, want, (token, ticket)));
    }
    state.ghost.set_overtaken |= overtaken;
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    state.send(To::Client(client), Msg::Granted { node, round, token });
}

fn holder(config: &Config, who: &[u8], want: Want, (token, ticket): (u64, u64)) -> Holder {
    Holder {
        owner: [who[0], who[1]],
        mode: want.mode(),
        token,
        tentative: config.ticketed.then_some(ticket),
        lapsed: false,
    }
}

/// The `PartialSet` mutant: the members that could be granted alone are written (one token),
/// though another member is not available.
fn grant_free(
    config: &Config,
    state: &mut State,
    node: usize,
    who: &[u8],
    how: (u64, &[Decision]),
) {
    let (ticket, decided) = how;
    let set = members(config, who);
    let n = &mut state.nodes[node];
    let free: Vec<Member> = set
        .iter()
        .zip(decided)
        .filter(|(_, d)| **d == Decision::Grant)
        .map(|(m, _)| *m)
        .collect();
    if free.is_empty() {
        return;
    }
    let Ok(token) = n.node.grant(&SETTINGS) else {
        return;
    };
    for (k, want) in free {
        let h = holder(config, who, want, (token, ticket));
        n.keys[usize::from(k)].holders.push(h);
    }
}

/// Revokes the wounded sets: every entry of each victim's owner on every key of the node (a
/// set is one hold). The `WoundOneMember` mutant revokes the entry on the contested member
/// only. Returns the keys freed.
fn wound(
    config: &Config,
    state: &mut State,
    node: usize,
    who: &[u8],
    victims: &[(usize, Vec<Victim>)],
) -> Vec<u8> {
    let one = config.mutant == Some(Mutant::WoundOneMember);
    let set = members(config, who);
    let mut freed = Vec::new();
    for (member, list) in victims {
        let contested = set[*member].0;
        for victim in list {
            let n = &mut state.nodes[node];
            for (k, key) in n.keys.iter_mut().enumerate() {
                if one && k != usize::from(contested) {
                    continue;
                }
                let before = key.holders.len();
                for h in key
                    .holders
                    .iter()
                    .filter(|h| h.owner[..] == victim.owner[..])
                {
                    state.ghost.committed_revoked |= h.tentative.is_none();
                }
                key.holders.retain(|h| h.owner[..] != victim.owner[..]);
                if key.holders.len() < before {
                    freed.push(k as u8);
                }
            }
        }
    }
    freed
}

/// FENCEALL: commits `token` on every member of `who`'s set, refused unless `who` holds them
/// all on this node (`Node::fence` on its newest entry: not lowering a token, raising the
/// counter). Refused, the node gives back whatever `who` still holds of the set.
fn fence_all(config: &Config, state: &mut State, node: usize, who: &[u8], token: u64) {
    let set = members(config, who);
    let n = &mut state.nodes[node];
    let mine = |key: &Key| key.holders.iter().find(|h| h.owner[..] == *who).cloned();
    let held: Vec<Option<Holder>> = set
        .iter()
        .map(|&(k, _)| mine(&n.keys[usize::from(k)]))
        .collect();
    let newest = held.iter().flatten().max_by_key(|h| h.token).cloned();
    let whole = held.iter().all(Option::is_some);
    let entry = newest.as_ref().filter(|_| whole).map(|h| Entry {
        owner: &h.owner,
        mode: h.mode,
        token: h.token,
        holds: 1,
        deadline_ms: u64::MAX,
    });
    let ok = matches!(n.node.fence(entry, who, token), Fence::Fenced { .. });
    if ok {
        for key in &mut n.keys {
            for h in key.holders.iter_mut().filter(|h| h.owner[..] == *who) {
                h.token = token;
                h.tentative = None;
            }
        }
    }
    let freed = if ok {
        Vec::new()
    } else {
        give_back(state, node, who)
    };
    for key in freed {
        hand_off(config, state, node, key);
    }
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    state.send(To::Client(client), Msg::Fenced { node, round, ok });
}

/// Removes every entry of `who` on the node; returns the keys it held.
fn give_back(state: &mut State, node: usize, who: &[u8]) -> Vec<u8> {
    let mut freed = Vec::new();
    for (k, key) in state.nodes[node].keys.iter_mut().enumerate() {
        let before = key.holders.len();
        key.holders.retain(|h| h.owner[..] != *who);
        if key.holders.len() < before {
            freed.push(k as u8);
        }
    }
    freed
}

fn withdraw(state: &mut State, node: usize, key: u8, who: &[u8]) {
    state.nodes[node].keys[usize::from(key)]
        .queue
        .remove_owner(who);
}

/// A place on `key` may have freed up, or its queue's head changed: serve the head while it
/// can be (`serve_set` over `serve_head` on each member the head heads). A set that heads
/// every member's queue with all of them free is granted; else everything on `key` waits.
pub fn hand_off(config: &Config, state: &mut State, node: usize, key: u8) {
    loop {
        let n = &state.nodes[node];
        let Some(head) = n.keys[usize::from(key)].queue.head() else {
            return;
        };
        let who = head.owner.clone();
        let (client, round) = (usize::from(who[0]), u32::from(who[1]));
        let set = members(config, &who);
        let serves: Vec<_> = set
            .iter()
            .map(|&(k, want)| {
                let key = &n.keys[usize::from(k)];
                let heads = key.queue.head().is_some_and(|w| w.owner == who);
                let (entries, _) = view(&key.holders);
                heads.then(|| rules::serve_head(&list(&entries), &who, want))
            })
            .collect();
        match serve_set(&serves) {
            SetServe::Wait => return,
            SetServe::Fail { .. } => {
                for &(k, _) in set {
                    withdraw(state, node, k, &who);
                }
                state.send(To::Client(client), Msg::Unavailable { node, round });
            }
            SetServe::Grant => {
                let ticket = state.clients[client].ticket;
                grant(config, state, node, &who, ticket);
                for &(k, _) in set.iter().filter(|&&(k, _)| k != key) {
                    hand_off(config, state, node, k);
                }
            }
        }
    }
}

/// Renumbers the node's arrival numbers to 0..k across all its queues, keeping their order and
/// keeping a set's number the same in each queue it is in, and the next arrival after them
/// all: two nodes with the same waiters in the same order compare equal, and a newcomer still
/// arrives after every waiter of every queue (a per-queue renumbering would break both).
pub fn canonicalize(n: &mut NodeState) {
    let mut numbers: BTreeMap<u64, u64> = BTreeMap::new();
    for key in &n.keys {
        numbers.extend(key.queue.iter().map(|w| (w.seq, 0)));
    }
    for (i, number) in numbers.values_mut().enumerate() {
        *number = i as u64;
    }
    for key in &mut n.keys {
        let mut queue = Queue::new();
        for w in key.queue.iter() {
            let place = (w.rank, numbers[&w.seq]);
            queue.push_at(&w.owner, place, w.ticketed, (w.ttl_ms, w.want), ());
        }
        key.queue = queue;
    }
    n.arrivals = numbers.len() as u64;
}

#[cfg(test)]
#[path = "sets_tests.rs"]
mod tests;
