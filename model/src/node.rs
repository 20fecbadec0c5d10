//! A node's side of the protocol: every decision is `dlock_core`'s, as in the module. The model
//! only stores the state the module keeps (the lock in the keyspace; the queue and the
//! tentative mark in module memory) and turns decisions into messages. Mutants are made by
//! feeding the same rules different inputs, never by changing them.

use dlock_core::lock::{self, Fence, Held, Release};
use dlock_core::wait::{self, Decision, Request, Tentative};
use dlock_core::Settings;

use crate::config::{Config, Mutant};
use crate::system::{owner, Msg, NodeState, State, To};

pub const SETTINGS: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: false,
};

fn held(lock: &Option<(Vec<u8>, u64)>) -> Option<Held<'_>> {
    lock.as_ref().map(|(owner, token)| Held {
        owner,
        token: *token,
        holds: 1,
        deadline_ms: u64::MAX,
    })
}

/// The lock is committed: held, and no tentative mark describes it.
pub fn committed(n: &NodeState) -> bool {
    match (held(&n.lock), &n.tentative) {
        (Some(h), Some(t)) => !t.describes(&h),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

pub fn on_message(config: &Config, state: &mut State, node: usize, msg: Msg) {
    if config.is_group() {
        return crate::group_node::on_message(config, state, node, msg);
    }
    match msg {
        Msg::Acquire {
            client,
            round,
            ticket,
        } => acquire(config, state, node, client, round, ticket),
        Msg::Fence {
            client,
            round,
            token,
        } => fence(config, state, node, client, round, token),
        Msg::Release { client, round } => release(state, node, client, round),
        _ => {}
    }
}

fn acquire(
    config: &Config,
    state: &mut State,
    node: usize,
    client: usize,
    round: u32,
    ticket: u64,
) {
    let who = owner(client, round);
    let n = &mut state.nodes[node];
    // The RevokeCommitted mutant shows the rules a committed grant as if it were tentative.
    let fake;
    let tentative = match (&n.tentative, held(&n.lock), config.mutant) {
        (_, Some(h), Some(Mutant::RevokeCommitted)) => {
            fake = Tentative {
                owner: h.owner.to_vec(),
                token: h.token,
                ticket: u64::MAX,
            };
            Some(&fake)
        }
        (t, _, _) => t.as_ref(),
    };
    let req = Request {
        owner: &who,
        reentrant: false,
        wait: true,
        ticket: Some(ticket),
        rank: ticket,
    };
    let mut decision = wait::acquire(held(&n.lock), tentative, &n.queue, &req);
    if n.quarantined && matches!(decision, Decision::Grant | Decision::Wound) {
        decision = Decision::Enqueue; // waits until the quarantine ends
    }
    match decision {
        Decision::Grant => grant(state, node, who, ticket),
        Decision::Renew { token, .. } => {
            state.send(To::Client(client), Msg::Granted { node, round, token })
        }
        Decision::Wound => {
            if committed(&state.nodes[node]) {
                state.ghost.committed_revoked = true;
            }
            let n = &mut state.nodes[node];
            n.lock = None;
            n.tentative = None;
            grant(state, node, who, ticket);
        }
        Decision::Enqueue => {
            // The FIFO mutant ranks by arrival: every waiter gets the same rank.
            let rank = if config.mutant == Some(Mutant::FifoQueue) {
                0
            } else {
                ticket
            };
            state.nodes[node]
                .queue
                .push(&who, rank, true, (0, Default::default()), ());
        }
        Decision::Contended | Decision::HoldLimit => {}
    }
}

/// A fresh grant to `who`, tentative for `ticket`.
fn grant(state: &mut State, node: usize, who: Vec<u8>, ticket: u64) {
    let n = &mut state.nodes[node];
    let Ok(token) = n.node.grant(&SETTINGS) else {
        return;
    };

    n.lock = Some((who.clone(), token));
    n.tentative = Some(Tentative {
        owner: who.clone(),
        token,
        ticket,
    });
    let (client, round) = (usize::from(who[0]), u32::from(who[1]));
    state.send(To::Client(client), Msg::Granted { node, round, token });
}

fn fence(config: &Config, state: &mut State, node: usize, client: usize, round: u32, token: u64) {
    let who = owner(client, round);
    let n = &mut state.nodes[node];
    // The FenceWithoutOwnerCheck mutant tells the rules the requester holds the lock.
    let shown = match config.mutant {
        Some(Mutant::FenceWithoutOwnerCheck) => Some(Held {
            owner: &who,
            token: n.lock.as_ref().map_or(0, |l| l.1),
            holds: 1,
            deadline_ms: u64::MAX,
        }),
        _ => held(&n.lock),
    };
    let ok = match n.node.fence(shown, &who, token) {
        Fence::Fenced { token } => {
            n.lock = Some((who.clone(), token));
            n.tentative = None;
            true
        }
        Fence::NotHeld | Fence::Lowers { .. } | Fence::TooFarAhead { .. } => false,
    };
    state.send(To::Client(client), Msg::Fenced { node, round, ok });
}

fn release(state: &mut State, node: usize, client: usize, round: u32) {
    let who = owner(client, round);
    let n = &mut state.nodes[node];
    if lock::release(held(&n.lock), &who) == Release::Removed {
        n.lock = None;
        n.tentative = None;
    }
    n.queue.remove_owner(&who);
    hand_off(state, node);
}

/// The lock became free: the first waiter in service order gets it.
pub fn hand_off(state: &mut State, node: usize) {
    if state.nodes[node].quarantined {
        return;
    }
    let smallest = state.nodes[node]
        .queue
        .iter()
        .map(|w| ticket_of(state, &w.owner))
        .min();
    let n = &mut state.nodes[node];
    let Some(next) = wait::next_holder(held(&n.lock), &mut n.queue) else {
        return;
    };
    let ticket = ticket_of(state, &next.owner);
    if smallest.is_some_and(|s| s < ticket) {
        state.ghost.served_out_of_order = true;
    }
    grant(state, node, next.owner, ticket);
}

fn ticket_of(state: &State, who: &[u8]) -> u64 {
    state.clients[usize::from(who[0])].ticket
}

/// The TTL ran out: the lock is free. A tentative grant that expires is refused by its FENCE;
/// a committed one expiring before its owner holds means the commit round outlasted the TTL.
pub fn expire(state: &mut State, node: usize) {
    let Some((owner, _)) = state.nodes[node].lock.clone() else {
        return;
    };
    if owner[0] != crate::system::EARLIER_HOLDER {
        state.budget.expiries -= 1;
    }
    if committed(&state.nodes[node]) {
        crate::client::outlive(state, &owner);
    }
    let n = &mut state.nodes[node];
    n.lock = None;
    n.tentative = None;
    hand_off(state, node);
}

/// A crash: the process is gone, with its waiters' connections (they learn their wait ended).
pub fn crash(config: &Config, state: &mut State, node: usize) {
    let n = &mut state.nodes[node];
    n.up = false;
    if let crate::config::Crashes::LoseState { quarantine: true } = config.crashes {
        if let Some((owner, _)) = n.lock.as_ref().filter(|_| committed(n)) {
            n.forgotten = Some(owner.clone()); // (else an earlier forgotten lock stays)
        }
    }
    let waiters: Vec<Vec<u8>> = n.queue.iter().map(|w| w.owner.clone()).collect();
    n.queue = Default::default();
    n.tentative = None; // module memory: lost; a restarted grant counts as committed
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
        n.lock = None;
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
    if let Some(owner) = state.nodes[node].forgotten.take() {
        crate::client::outlive(state, &owner);
    }
    if config.is_group() {
        crate::group_node::hand_off(config, state, node);
    } else {
        hand_off(state, node);
    }
}
