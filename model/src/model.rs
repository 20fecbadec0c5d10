//! The stateright `Model`: which actions each state allows, and what each does.
//!
//! Requests travel a network that delays, reorders, duplicates and loses them. Replies are read
//! by their client in the step that sends them: a reply read late is the same as the client's
//! next request leaving late, which the network already allows, and the client learns nothing
//! from a reply's timing (a revocation, say, reaches it only through its FENCE being refused).
//! This halves the interleavings without hiding a behaviour.

use stateright::{Model, Property};

use crate::config::{Config, Crashes, Expiry};
use crate::system::{Action, Msg, Phase, State, To};
use crate::{client, deferred, gate, node, sets};

pub struct DlockModel {
    pub config: Config,
    /// The properties checked in this run (by name).
    pub checked: Vec<&'static str>,
    /// Each property by its name (`properties::property`, which names this model).
    pub property: fn(&'static str) -> Property<DlockModel>,
}

impl Model for DlockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut state = State::initial(&self.config);
        client::start_holding(&self.config, &mut state);
        vec![state]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let cfg = &self.config;
        for (i, c) in s.clients.iter().enumerate() {
            match c.phase {
                Phase::Idle => actions.push(Action::Start(i)),
                Phase::Holding => {
                    actions.push(Action::Finish(i));
                    // A token owed its commit, or being committed, cannot be written with yet.
                    let usable = c.owed.is_none() && c.commit.is_none();
                    if cfg.gate && !c.wrote && usable {
                        actions.push(Action::Write(i));
                    }
                }
                Phase::Acquiring if s.budget.asks_again > 0 => actions.push(Action::AskAgain(i)),
                _ => {}
            }
            if deferred::may_use(cfg, s, i) {
                actions.push(Action::Use(i));
            }
        }
        for &(node, client, chan) in s.net.keys() {
            actions.push(Action::Deliver(node, client, chan));
            if s.budget.drops > 0 {
                actions.push(Action::Drop(node, client, chan));
            }
            if s.budget.duplicates > 0 {
                actions.push(Action::Duplicate(node, client, chan));
            }
        }
        if cfg.gate && s.budget.gate_restarts > 0 {
            actions.push(Action::GateRestart);
        }
        for (i, n) in s.nodes.iter().enumerate() {
            for (at, h) in n.holders.iter().enumerate() {
                if n.up && !h.lapsed && self.may_expire(s, &h.owner) {
                    actions.push(Action::Expire(i, at));
                }
            }
            if cfg.crashes != Crashes::None {
                if n.up && s.budget.crashes > 0 {
                    actions.push(Action::Crash(i));
                } else if !n.up {
                    actions.push(Action::Restart(i));
                }
            }
            if n.up && n.quarantined && self.quarantine_may_end(s, i) {
                actions.push(Action::QuarantineEnds(i));
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let cfg = &self.config;
        let mut s = last.clone();
        match action {
            Action::Start(c) => client::start(cfg, &mut s, c),
            Action::Finish(c) => client::finish(cfg, &mut s, c),
            Action::Use(c) => deferred::use_token(cfg, &mut s, c),
            Action::AskAgain(c) => client::ask_again(cfg, &mut s, c),
            Action::Deliver(n, c, chan) => {
                if let Some(msg) = s.take((n, c, chan)) {
                    if let Msg::Write { client, token } = msg {
                        gate::on_write(cfg, &mut s, client, token);
                    } else if !cfg.sets.is_empty() {
                        sets::on_message(cfg, &mut s, n, msg);
                    } else if s.nodes[n].up {
                        node::on_message(cfg, &mut s, n, msg); // a down node loses it
                    }
                }
            }
            Action::Drop(n, c, chan) => {
                s.take((n, c, chan));
                s.budget.drops -= 1;
            }
            Action::Duplicate(n, c, chan) => {
                if let Some(&msg) = s.net.get(&(n, c, chan)).and_then(|q| q.first()) {
                    s.send(To::Node(n), msg);
                }
                s.budget.duplicates -= 1;
            }
            Action::Expire(n, at) => node::expire(cfg, &mut s, n, at),
            Action::Crash(n) => {
                s.budget.crashes -= 1;
                node::crash(cfg, &mut s, n);
            }
            Action::Restart(n) => node::restart(cfg, &mut s, n),
            Action::QuarantineEnds(n) => node::quarantine_ends(cfg, &mut s, n),
            Action::Write(c) => gate::write(&mut s, c),
            Action::GateRestart => gate::restart(cfg, &mut s),
        }
        client::settle(cfg, &mut s);
        for n in &mut s.nodes {
            n.highest_counter = n.highest_counter.max(n.node.counter());
            n.queue.canonicalize();
            if !n.keys.is_empty() {
                sets::canonicalize(n);
            }
        }
        (s != *last).then_some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.checked
            .iter()
            .map(|&name| (self.property)(name))
            .collect()
    }
}

impl DlockModel {
    /// Whether a lease of `owner` may end now (see [`Expiry`]).
    fn may_expire(&self, s: &State, owner: &[u8]) -> bool {
        if owner[0] == crate::system::EARLIER_HOLDER {
            return true; // a crashed earlier holder's TTL runs out whenever
        }
        if s.budget.expiries == 0 {
            return false;
        }
        match self.config.expiry {
            Expiry::Never => false,
            Expiry::Anytime => true,
            Expiry::WhenNotHolding => s.clients[usize::from(owner[0])].phase != Phase::Holding,
        }
    }

    /// The quarantine's assumption: it lasts at least a TTL, so it ends only once the holds
    /// the node forgot are over for their owners too (not held in that round any more).
    fn quarantine_may_end(&self, s: &State, node: usize) -> bool {
        s.nodes[node].forgotten.iter().all(|owner| {
            let Some(c) = s.clients.get(usize::from(owner[0])) else {
                return true; // an earlier holder
            };
            let round = c.acquisition.as_ref().map_or(0, |a| a.round());
            !(c.phase == Phase::Holding && u32::from(owner[1]) == round)
        })
    }
}
