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
pub const SET_EXCLUSION: &str =
    "sets: no key has a writer beside another holder (as the clients believe)";
pub const ALL_OR_NOTHING: &str = "sets: on every node a set is held whole or not at all";
pub const SET_SERVED: &str = "sets: every request is eventually served (no deadlock)";
pub const SET_FAIRNESS: &str = "sets: no request is granted a key a waiter ranked ahead waits on";
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

/// Per key, the clients that believe they hold it include no writer beside anyone else.
fn set_exclusion(m: &DlockModel, s: &State) -> bool {
    let holding: Vec<&[crate::config::Member]> = s
        .clients
        .iter()
        .enumerate()
        .filter(|(_, c)| c.phase == Phase::Holding)
        .map(|(i, _)| m.config.sets[i].as_slice())
        .collect();
    (0..m.config.keys() as u8).all(|key| {
        let on: Vec<Want> = holding
            .iter()
            .filter_map(|set| set.iter().find(|(k, _)| *k == key).map(|&(_, w)| w))
            .collect();
        !on.contains(&Want::Exclusive) || on.len() == 1
    })
}

/// Every owner holding any key of a node holds every member of its set there.
fn all_or_nothing(m: &DlockModel, s: &State) -> bool {
    s.nodes.iter().all(|n| {
        let holds = |owner: &[u8; 2], key: u8| {
            n.keys[usize::from(key)]
                .holders
                .iter()
                .any(|h| h.owner == *owner)
        };
        n.keys.iter().flat_map(|k| &k.holders).all(|h| {
            let set = &m.config.sets[usize::from(h.owner[0])];
            set.iter().all(|&(key, _)| holds(&h.owner, key))
        })
    })
}

fn set_fairness(_: &DlockModel, s: &State) -> bool {
    !s.ghost.set_overtaken
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
        SET_EXCLUSION => Property::always(name, set_exclusion),
        ALL_OR_NOTHING => Property::always(name, all_or_nothing),
        // The set runs have no faults and no budget: every step delivers a message (a finite
        // number of them, each client asking in rounds that end) or moves a client on, so their
        // state graph has no cycle and every path ends. Stateright reports an `eventually`
        // property on a path that ends without it: a state where some client still waits and
        // nothing can happen (no message in flight, nobody holding who could release), which
        // is a deadlock of waiters, or a waiter nobody serves (starvation of a set).
        SET_SERVED => Property::eventually(name, all_served),
        SET_FAIRNESS => Property::always(name, set_fairness),
        _ => Property::always(TICKET_ORDER, ticket_order),
    }
}
