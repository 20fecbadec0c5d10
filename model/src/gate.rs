//! The resource the holders write to, behind a gate (`dlock_core::gate`, the rule DLOCK.GUARD
//! applies): a holder sends one write under its token while it holds, and the network may
//! deliver it at any later moment (the holder paused, the packet delayed), after the lock
//! passed to someone else. The gate's server keeps the gate with the data across a restart.

use dlock_core::gate;

use crate::config::{Config, Mutant};
use crate::system::{Msg, State, To};

/// The network address of the gate's server (beside the lock nodes, `0..nodes`).
pub const GATE: usize = usize::MAX;

/// The resource: the gate, and (ghost) the newest write that landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    pub gate: Option<u64>,
    /// Ghost: the client and token of the highest write that landed.
    pub newest: Option<(usize, u64)>,
    /// Ghost: a write landed under a token below one already written, or equal to another
    /// holder's.
    pub stale_write: bool,
}

/// The client, holding under its token, sends its write.
pub fn write(state: &mut State, client: usize) {
    let hold = state.ghost.holds.iter().rev().find(|h| h.client == client);
    let Some(token) = hold.map(|h| h.token) else {
        return;
    };
    state.clients[client].wrote = true;
    state.send(To::Gate, Msg::Write { client, token });
}

/// A write reaches the gate.
pub fn on_write(config: &Config, state: &mut State, client: usize, token: u64) {
    let r = &mut state.resource;
    let admitted = match config.mutant {
        Some(Mutant::UncheckedResource) => true,
        Some(Mutant::GateOneBelow) => gate::admits(r.gate.map(|g| g.saturating_sub(1)), token),
        _ => gate::admits(r.gate, token),
    };
    if !admitted {
        return; // STALE: nothing changes
    }
    r.gate = Some(gate::raised(r.gate, token));
    match r.newest {
        Some((c, t)) if token < t || (token == t && c != client) => r.stale_write = true,
        Some((_, t)) if token == t => {}
        _ => r.newest = Some((client, token)),
    }
}

/// The gate's server restarts from its persisted data: the gate comes back with it (the
/// `GateForgetsOnRestart` mutant keeps the data and loses the gate).
pub fn restart(config: &Config, state: &mut State) {
    state.budget.gate_restarts -= 1;
    if config.mutant == Some(Mutant::GateForgetsOnRestart) {
        state.resource.gate = None;
    }
}
