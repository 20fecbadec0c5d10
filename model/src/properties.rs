//! The properties, each named as the run prints it.

use dlock_core::{Mode, Want};
use stateright::Property;

use crate::system::{Phase, State};
use crate::DlockModel;

pub const TOKEN_ORDER: &str = "token order: a later hold on a common node has the larger token";
pub const NEVER_REVOKED: &str = "a committed grant is never revoked by a ticket";
pub const NO_DEADLOCK: &str = "no deadlock: every client is eventually served";
pub const SMALLEST_FIRST: &str = "the smallest ticket commits in its first round";
pub const MUTUAL_EXCLUSION: &str = "at most one client believes it holds the lock";
pub const TICKET_ORDER: &str = "waiters are served smallest ticket first";
pub const RW_EXCLUSION: &str = "no writer overlaps a reader or another writer";
pub const SEMAPHORE_LIMIT: &str = "at most limit semaphore holders";
pub const NO_LOST_PERMIT: &str = "no lost permit after a holder's lease ends";
pub const NO_STALE_WRITE: &str =
    "no write lands under a token below one already written (nor another holder's equal)";

/// For two successful acquisitions held on a common node, the one granted later there has the
/// larger token (the quorum-fencing claim; node tokens increase, so they order the grants).
/// Claimed for holds that exclude each other: readers, or permits, may hold side by side, and
/// nothing orders their tokens (nor needs to).
fn token_order(_: &DlockModel, s: &State) -> bool {
    s.ghost.holds.iter().all(|a| {
        s.ghost.holds.iter().all(|b| {
            let exclusive = a.mode == Mode::Exclusive || b.mode == Mode::Exclusive;
            !exclusive
                || a.granted.iter().all(|&(node, ga)| {
                    b.granted.iter().all(|&(other, gb)| {
                        node != other || a.client == b.client || ga >= gb || a.token < b.token
                    })
                })
        })
    })
}

fn no_stale_write(_: &DlockModel, s: &State) -> bool {
    !s.resource.stale_write
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

/// The clients that believe they hold, by what they asked for.
fn holding<'a>(m: &'a DlockModel, s: &'a State) -> impl Iterator<Item = Want> + 'a {
    let holds = |&(_, c): &(usize, &crate::system::ClientState)| c.phase == Phase::Holding;
    s.clients
        .iter()
        .enumerate()
        .filter(holds)
        .map(|(i, _)| m.config.want(i))
}

/// A client holding exclusively holds alone.
fn rw_exclusion(m: &DlockModel, s: &State) -> bool {
    let writers = holding(m, s).filter(|&w| w == Want::Exclusive).count();
    writers == 0 || holding(m, s).count() == 1
}

fn semaphore_limit(m: &DlockModel, s: &State) -> bool {
    let permits = holding(m, s).filter(|w| matches!(w, Want::Permit { .. }));
    permits.count() <= m.config.limit() as usize
}

/// Every property by name, with its kind.
pub fn property(name: &'static str) -> Property<DlockModel> {
    match name {
        TOKEN_ORDER => Property::always(name, token_order),
        NEVER_REVOKED => Property::always(name, never_revoked),
        NO_DEADLOCK => Property::eventually(name, all_served),
        SMALLEST_FIRST => Property::always(name, smallest_first),
        MUTUAL_EXCLUSION => Property::always(name, mutual_exclusion),
        RW_EXCLUSION => Property::always(name, rw_exclusion),
        SEMAPHORE_LIMIT => Property::always(name, semaphore_limit),
        NO_STALE_WRITE => Property::always(name, no_stale_write),
        // Checked where earlier holders' leases end: their places must come back, so the
        // clients queued behind them are all served.
        NO_LOST_PERMIT => Property::eventually(name, all_served),
        _ => Property::always(TICKET_ORDER, ticket_order),
    }
}
