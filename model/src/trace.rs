//! A counterexample, step by step, in words: each action and what it left behind.

use dlock_core::Mode;
use stateright::Path;

use crate::system::{Action, Msg, Phase, State};

pub fn render(path: Path<State, Action>) -> String {
    let steps = path.into_vec();
    let mut out = String::new();
    let mut number = 0;
    for window in steps.windows(2) {
        let (before, action) = (&window[0].0, &window[0].1);
        let after = &window[1].0;
        let Some(action) = action else { continue };
        number += 1;
        out += &format!(
            "  {number:>2}. {}\n      -> {}\n",
            step(before, action),
            summary(after)
        );
    }
    out
}

fn owner(o: &[u8]) -> String {
    if o[0] == crate::system::EARLIER_HOLDER {
        format!("earlier holder {}", o[1])
    } else {
        format!("c{}:{}", o[0], o[1])
    }
}

fn step(before: &State, action: &Action) -> String {
    match action {
        Action::Start(c) => format!(
            "c{c} (ticket {}) starts waiting on every node",
            before.clients[*c].ticket
        ),
        Action::Finish(c) => format!("c{c} leaves its critical section and releases everywhere"),
        Action::Use(c) => format!("c{c} reads its token: the commit goes out"),
        Action::AskAgain(c) => format!("c{c} times out and asks again"),
        Action::Deliver(n, c, chan) => {
            let msg = before.net.get(&(*n, *c, *chan)).and_then(|q| q.first());
            format!("{} receives {}", place(*n), msg.map_or("?".into(), message))
        }
        Action::Drop(n, c, _) => format!("a request from c{c} to node {n} is lost"),
        Action::Duplicate(n, c, _) => format!("a request from c{c} to node {n} is sent again"),
        Action::Expire(n, at) => {
            let h = &before.nodes[*n].holders[*at];
            format!("the lease of {} on node {n} ends", owner(&h.owner))
        }
        Action::Crash(n) => format!("node {n} crashes"),
        Action::Restart(n) => format!("node {n} restarts"),
        Action::QuarantineEnds(n) => format!("node {n}'s quarantine ends"),
        Action::Write(c) => format!("c{c} sends its write through the gate"),
        Action::GateRestart => "the gate's server restarts".into(),
    }
}

fn place(n: usize) -> String {
    match n {
        crate::system::GATE => "the gate".into(),
        n => format!("node {n}"),
    }
}

fn message(msg: &Msg) -> String {
    match *msg {
        Msg::Acquire {
            client,
            round,
            ticket,
        } => format!("ACQUIRE c{client}:{round} WAIT TICKET {ticket}"),
        Msg::Fence {
            client,
            round,
            token,
        } => format!("FENCE c{client}:{round} {token}"),
        Msg::Release { client, round } => format!("RELEASE c{client}:{round}"),
        Msg::Try { client, round } => format!("ACQUIRE c{client}:{round} (no wait)"),
        Msg::Place {
            client,
            round,
            member,
        } => format!("c{client}:{round}'s place in its member {member}'s queue"),
        Msg::Write { client, token } => format!("c{client}'s write under token {token}"),
        other => format!("{other:?}"),
    }
}

/// A node's holders: each as `owner mode token`, `?` when tentative, `~` when its lease ended
/// (kept only by a mutant).
fn holders(n: &crate::system::NodeState) -> String {
    if !n.keys.is_empty() {
        return keys(n);
    }
    entries(&n.holders)
}

/// A set run's node: each key as `a=holders [queue]`.
fn keys(n: &crate::system::NodeState) -> String {
    let shown = n.keys.iter().zip('a'..).map(|(k, name)| {
        let queue: Vec<String> = k.queue.iter().map(|w| owner(&w.owner)).collect();
        match queue.is_empty() {
            true => format!("{name}={}", entries(&k.holders)),
            false => format!("{name}={} [{}]", entries(&k.holders), queue.join(",")),
        }
    });
    shown.collect::<Vec<_>>().join(" ")
}

fn entries(holders: &[crate::system::Holder]) -> String {
    let shown: Vec<String> = holders
        .iter()
        .map(|h| {
            let mode = match h.mode {
                Mode::Exclusive => "X",
                Mode::Shared => "S",
                Mode::Permit => "P",
            };
            let mark = if h.lapsed {
                "~"
            } else if h.tentative.is_some() {
                "?"
            } else {
                ""
            };
            format!("{} {mode} t{}{mark}", owner(&h.owner), h.token)
        })
        .collect();
    if shown.is_empty() {
        "free".into()
    } else {
        shown.join(", ")
    }
}

fn summary(s: &State) -> String {
    let nodes: Vec<String> = s
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let lock = holders(n);
            let queue: Vec<String> = n.queue.iter().map(|w| owner(&w.owner)).collect();
            let down = if n.up { "" } else { " DOWN" };
            let q = if queue.is_empty() {
                String::new()
            } else {
                format!(" [{}]", queue.join(","))
            };
            format!("n{i}: {lock}{q}{down}")
        })
        .collect();
    let clients: Vec<String> = s
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| match c.phase {
            Phase::Holding if c.owed.is_some() || c.commit.is_some() => {
                format!("c{i} HOLDS, its token uncommitted")
            }
            Phase::Holding => {
                let token = s
                    .ghost
                    .holds
                    .iter()
                    .rev()
                    .find(|h| h.client == i)
                    .map_or(0, |h| h.token);
                format!("c{i} HOLDS t{token}")
            }
            ref p => format!("c{i} {p:?}"),
        })
        .collect();
    let gate = match s.resource.gate {
        Some(token) => format!(" | gate t{token}"),
        None => String::new(),
    };
    format!("{} | {}{gate}", nodes.join("  "), clients.join(", "))
}
