//! A client's side: the async client's own acquisition machine (`dlock_client::acquisition`),
//! fed with the replies the network delivers. One acquisition per client: wait, commit, hold,
//! release.

use dlock_client::acquisition::{Acquisition, Event, Step};

use crate::config::{Config, Mutant};
use crate::system::{Chan, Hold, Msg, Phase, State, To};

pub fn start(config: &Config, state: &mut State, client: usize) {
    let needed = config.needed(client);
    let (acquisition, steps) = if config.no_wait.contains(&client) {
        // One round of plain ACQUIREs, held on the grants: the commit waits for a read.
        Acquisition::start_once(config.nodes, needed, false)
    } else {
        Acquisition::start_needing(config.nodes, needed)
    };
    let c = &mut state.clients[client];
    c.phase = Phase::Acquiring;
    c.acquisition = Some(acquisition);
    apply(config, state, client, steps);
}

pub fn on_message(config: &Config, state: &mut State, client: usize, msg: Msg) {
    let c = &mut state.clients[client];
    if let (Some(_), Msg::Fenced { node, ok, .. }) = (&c.commit, msg) {
        return crate::deferred::on_fenced(config, state, client, (node, ok));
    }
    let Some(acquisition) = c.acquisition.as_mut() else {
        return;
    };
    match (c.phase.clone(), msg) {
        (Phase::Acquiring, _) => {}
        // Done: a wait that reached a node after the final RELEASE was granted: release it.
        (Phase::Done, Msg::Granted { node, round, .. }) => {
            return state.send(To::Node(node), Msg::Release { client, round })
        }
        _ => return, // held: late replies are covered by the final RELEASE
    }
    let event = match msg {
        Msg::Granted { node, round, token } => {
            if round == acquisition.round() {
                c.grants[node] = Some(token);
            }
            Event::Granted { node, round, token }
        }
        Msg::Unavailable { node, round } => Event::Unavailable { node, round },
        Msg::Fenced { node, round, ok } => Event::Fenced {
            node,
            round,
            committed: ok,
        },
        _ => return,
    };
    let before = acquisition.round();
    let steps = acquisition.on(event);
    if acquisition.round() != before {
        c.grants = vec![None; config.nodes];
        c.outlived_ttl = false;
    }
    apply(config, state, client, steps);
}

fn apply(config: &Config, state: &mut State, client: usize, steps: Vec<Step>) {
    let ticket = state.clients[client].ticket;
    for step in steps {
        match step {
            Step::Wait { round, nodes } if config.no_wait.contains(&client) => {
                for node in nodes {
                    state.send(To::Node(node), Msg::Try { client, round });
                }
            }
            Step::Wait { round, nodes } => send_waits(state, client, round, ticket, nodes),
            Step::Fence { token, nodes, .. }
                if config.mutant == Some(Mutant::DeferredTicketedGrant) =>
            {
                crate::deferred::owe(state, client, (token, nodes)); // tentative, uncommitted
            }
            Step::Fence { token, nodes, .. } if config.mutant == Some(Mutant::NoCommit) => {
                hold(config, state, client, (token, nodes)); // the largest token, uncommitted
            }
            Step::Fence {
                round,
                token,
                nodes,
            } => state.fence(client, round, token, nodes),
            Step::Release { round, nodes } => {
                for node in nodes {
                    state.send(To::Node(node), Msg::Release { client, round });
                }
            }
            Step::Held { .. } if state.clients[client].outlived_ttl => {
                // The validity check fails: give the round up everywhere.
                let c = &mut state.clients[client];
                c.phase = Phase::Done;
                let round = c.acquisition.as_ref().map_or(0, Acquisition::round);
                for node in 0..config.nodes {
                    state.send(To::Node(node), Msg::Release { client, round });
                }
            }
            Step::Held { token } => {
                let on = state.clients[client]
                    .acquisition
                    .as_ref()
                    .map(Acquisition::holding_nodes)
                    .unwrap_or_default();
                if config.no_wait.contains(&client) {
                    crate::deferred::owe(state, client, (token, on));
                } else {
                    hold(config, state, client, (token, on));
                }
            }
            Step::Failed => state.clients[client].phase = Phase::Done,
        }
    }
}

fn hold(config: &Config, state: &mut State, client: usize, (token, on): (u64, Vec<usize>)) {
    let c = &mut state.clients[client];
    c.phase = Phase::Holding;
    let granted = on
        .iter()
        .filter_map(|&n| c.grants[n].map(|t| (n, t)))
        .collect();
    state.ghost.holds.push(Hold {
        client,
        mode: config.want(client).mode(),
        token,
        granted,
    });
}

/// The critical section is over: release on every node.
pub fn finish(config: &Config, state: &mut State, client: usize) {
    state.finish(config.nodes, client);
}

/// A timed-out call: ask every node that has not granted this round again (idempotent).
pub fn ask_again(config: &Config, state: &mut State, client: usize) {
    state.budget.asks_again -= 1;
    let c = &state.clients[client];
    let Some(acquisition) = &c.acquisition else {
        return;
    };
    let (round, ticket) = (acquisition.round(), c.ticket);
    let silent: Vec<usize> = (0..config.nodes)
        .filter(|&n| acquisition.granted_token(n).is_none())
        .collect();
    send_waits(state, client, round, ticket, silent);
}

/// `ACQUIRE ... WAIT TICKET ticket` as the owner of `round`, to each of `nodes`.
fn send_waits(state: &mut State, client: usize, round: u32, ticket: u64, nodes: Vec<usize>) {
    for node in nodes {
        let msg = Msg::Acquire {
            client,
            round,
            ticket,
        };
        state.send(To::Node(node), msg);
    }
}

/// The clients of `config.holding_at_start` already hold: granted on their nodes, committed
/// with the largest of those grants, in their critical section. The same machine and node
/// rules as in a run.
pub fn start_holding(config: &Config, state: &mut State) {
    for (client, on) in &config.holding_at_start {
        hold_from_start(config, state, *client, on);
    }
}

/// Runs `client`'s acquisition with only `on` answering: its waits there are granted, its
/// FENCEs there commit, and its waits elsewhere are never delivered.
fn hold_from_start(config: &Config, state: &mut State, client: usize, on: &[usize]) {
    start(config, state, client);
    for chan in [Chan::Wait, Chan::Command] {
        for &node in on {
            while let Some(msg) = state.take((node, client, chan)) {
                crate::node::on_message(config, state, node, msg);
                settle(config, state);
            }
        }
    }
    state.net.retain(|&(_, c, _), _| c != client);
}

/// Reads the replies sent in this step (see the module docs of `model`).
pub fn settle(config: &Config, state: &mut State) {
    while !state.inbox.is_empty() {
        for (c, msg) in std::mem::take(&mut state.inbox) {
            on_message(config, state, c, msg);
        }
    }
}
