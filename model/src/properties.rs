//! The properties, each named as the run prints it.

use stateright::Property;

use crate::system::{Phase, State};
use crate::DlockModel;

pub const TOKEN_ORDER: &str = "token order: a later hold on a common node has the larger token";
pub const NEVER_REVOKED: &str = "a committed grant is never revoked by a ticket";
pub const NO_DEADLOCK: &str = "no deadlock: every client is eventually served";
pub const SMALLEST_FIRST: &str = "the smallest ticket commits in its first round";
pub const MUTUAL_EXCLUSION: &str = "at most one client believes it holds the lock";
pub const TICKET_ORDER: &str = "waiters are served smallest ticket first";

/// For two successful acquisitions held on a common node, the one granted later there has the
/// larger token (the quorum-fencing claim; node tokens increase, so they order the grants).
fn token_order(_: &DlockModel, s: &State) -> bool {
    s.ghost.holds.iter().all(|a| {
        s.ghost.holds.iter().all(|b| {
            a.granted.iter().all(|&(node, ga)| {
                b.granted.iter().all(|&(other, gb)| {
                    node != other || a.client == b.client || ga >= gb || a.token < b.token
                })
            })
        })
    })
}

fn never_revoked(_: &DlockModel, s: &State) -> bool {
    !s.ghost.committed_revoked
}

fn all_served(_: &DlockModel, s: &State) -> bool {
    s.clients.iter().all(|c| c.phase == Phase::Done)
}

fn smallest_first(_: &DlockModel, s: &State) -> bool {
    let smallest = s.clients.iter().min_by_key(|c| c.ticket);
    smallest.is_none_or(|c| c.acquisition.as_ref().is_none_or(|a| a.round() == 0))
}

fn mutual_exclusion(_: &DlockModel, s: &State) -> bool {
    s.clients
        .iter()
        .filter(|c| c.phase == Phase::Holding)
        .count()
        <= 1
}

fn ticket_order(_: &DlockModel, s: &State) -> bool {
    !s.ghost.served_out_of_order
}

/// Every property by name, with its kind.
pub fn property(name: &'static str) -> Property<DlockModel> {
    match name {
        TOKEN_ORDER => Property::always(name, token_order),
        NEVER_REVOKED => Property::always(name, never_revoked),
        NO_DEADLOCK => Property::eventually(name, all_served),
        SMALLEST_FIRST => Property::always(name, smallest_first),
        MUTUAL_EXCLUSION => Property::always(name, mutual_exclusion),
        _ => Property::always(TICKET_ORDER, ticket_order),
    }
}
