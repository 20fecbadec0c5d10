//! The commit paid when the token is read (docs/protocol.md §4.1): a client without a wait
//! (`try_lock`) holds on a quorum of plain grants, which no ticket can wound, and commits its
//! token only when it reads it, with the client's own machine (`dlock_client::commit`). Its
//! token counts as used, for token order and at the gate, only once a quorum committed it.

use dlock_client::commit::{Commit, Outcome};

use crate::config::{Config, Mutant};
use crate::system::{Hold, Phase, State};

/// Held without its commit: `token` (the largest grant) on the nodes `on` that granted it.
pub fn owe(state: &mut State, client: usize, (token, on): (u64, Vec<usize>)) {
    let c = &mut state.clients[client];
    c.phase = Phase::Holding;
    c.owed = Some((token, on));
}

/// Whether `client` may read its token now: it holds one not yet read (the
/// `ReleaseOvertakesCommit` mutant also once it released).
pub fn may_use(config: &Config, state: &State, client: usize) -> bool {
    let c = &state.clients[client];
    let released = c.phase == Phase::Done && mutant(config, Mutant::ReleaseOvertakesCommit);
    c.owed.is_some() && c.commit.is_none() && (c.phase == Phase::Holding || released)
}

fn mutant(config: &Config, mutant: Mutant) -> bool {
    config.mutant == Some(mutant)
}

/// The token is read: its commit goes to every node that granted (FENCE, same round owner).
pub fn use_token(config: &Config, state: &mut State, client: usize) {
    let needed = config.needed(client);
    let c = &mut state.clients[client];
    let Some((token, on)) = c.owed.take() else {
        return;
    };
    if mutant(config, Mutant::UsedBeforeCommit) {
        return record(config, state, client, token);
    }
    let (needed, asked) = if mutant(config, Mutant::CommitToMinority) {
        let largest = on.iter().copied().find(|&n| c.grants[n] == Some(token));
        (1, largest.into_iter().collect())
    } else {
        (needed, on)
    };
    let (commit, asked) = Commit::start(config.nodes, needed, token, &asked);
    c.commit = Some(commit);
    let round = c.acquisition.as_ref().map_or(0, |a| a.round());
    state.fence(client, round, token, asked);
}

/// A FENCE of the commit answered. Committed on a quorum: the token is used. Lost: the client
/// stops and releases. Replies after the client released change nothing (the mutant counts
/// them as commits).
pub fn on_fenced(config: &Config, state: &mut State, client: usize, (node, ok): (usize, bool)) {
    let overtaken = mutant(config, Mutant::ReleaseOvertakesCommit);
    let c = &mut state.clients[client];
    let holding = c.phase == Phase::Holding;
    let Some(commit) = c.commit.as_mut() else {
        return;
    };
    match commit.on_fenced(node, ok || (overtaken && !holding)) {
        Outcome::Pending => {}
        Outcome::Committed(token) => {
            c.commit = None;
            if holding || overtaken {
                record(config, state, client, token);
            }
        }
        Outcome::Lost => {
            c.commit = None;
            if holding {
                state.finish(config.nodes, client);
            }
        }
    }
}

/// The token is used: recorded with the grants it stands on.
fn record(config: &Config, state: &mut State, client: usize, token: u64) {
    let c = &mut state.clients[client];
    c.used = true;
    let granted = (0..config.nodes)
        .filter_map(|n| c.grants[n].map(|t| (n, t)))
        .collect();
    state.ghost.holds.push(Hold {
        client,
        mode: config.want(client).mode(),
        token,
        granted,
    });
}
