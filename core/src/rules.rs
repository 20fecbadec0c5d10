//! What ACQUIRE, RELEASE, EXTEND and FENCE do to a resource, and who a queue serves next: one
//! set of rules for every lock (exclusive, shared, semaphore permit). Token issuance and the
//! FENCE commit need the node's counter and live in [`crate::node`].
//!
//! - A resource has one kind while anyone holds it; asking it as another kind is refused, never
//!   converted. An exclusive holder that asks for the shared side keeps its token (a downgrade);
//!   a shared holder asking for exclusive is refused (two readers upgrading would wait for each
//!   other forever).
//! - A request never jumps the queue: a place that frees up goes to the waiters ranked ahead.
//! - A ticketed request may wound tentative grants made for larger tickets, and only if revoking
//!   them is enough to grant it. A committed or un-ticketed grant is never revoked.
//!
//! Every question asked of the holders is one of [`Holders`]', so a decision costs the same
//! whatever the resource holds.

use crate::holders::{Holder, Holders, Kind, Mode, Want};
use crate::queue::{Queue, Request};
use crate::tentative::Tentatives;

/// What ACQUIRE does when nobody is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// A fresh entry for the owner, with a fresh token.
    Grant,
    /// The owner holds it exclusively and asks for the shared side: a shared entry with the
    /// exclusive entry's token (the same hold goes on).
    Downgrade {
        token: u64,
    },
    /// The owner already holds it in this mode: keep the token, store `holds`, new deadline.
    Renew {
        token: u64,
        holds: u16,
    },
    /// Not available to this owner now.
    Contended,
    /// The resource is another kind while held.
    WrongKind {
        is: Kind,
    },
    UpgradeRefused,
    /// REENTRANT would overflow the hold count.
    HoldLimit,
}

pub fn acquire(h: &impl Holders, owner: &[u8], want: Want, reentrant: bool) -> Acquire {
    if h.count() == 0 {
        return Acquire::Grant; // free: any kind, any mode (the common case, asked first)
    }
    if let Some(is) = h.kind().filter(|&is| is != want.kind()) {
        return Acquire::WrongKind { is };
    }
    let mine = h.mine(owner);
    if let Some(entry) = mine.get(want.mode()) {
        return renew(&entry, reentrant);
    }
    match want {
        Want::Exclusive if mine.shared.is_some() => Acquire::UpgradeRefused,
        Want::Exclusive if h.count() == 0 => Acquire::Grant,
        Want::Shared => match h.exclusive() {
            Some(x) if x.owner == owner => Acquire::Downgrade { token: x.token },
            Some(_) => Acquire::Contended,
            None => Acquire::Grant,
        },
        Want::Permit { limit } if h.count() < limit as usize => Acquire::Grant,
        _ => Acquire::Contended,
    }
}

fn renew(mine: &Holder<'_>, reentrant: bool) -> Acquire {
    let holds = if reentrant {
        mine.holds.checked_add(1)
    } else {
        Some(mine.holds)
    };
    match holds {
        Some(holds) => Acquire::Renew {
            token: mine.token,
            holds,
        },
        None => Acquire::HoldLimit,
    }
}

/// What RELEASE does to the owner's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    NotHeld,
    /// The entry of `mode` keeps `holds` holds.
    Decremented {
        mode: Mode,
        holds: u16,
    },
    /// The entry of `mode` goes; `last`: the owner holds nothing more.
    Removed {
        mode: Mode,
        last: bool,
    },
}

/// One hold of the owner's exclusive entry if it has one, else of its shared entry or permit.
pub fn release(h: &impl Holders, owner: &[u8]) -> Release {
    let mine = h.mine(owner);
    let Some(entry) = mine.iter().next() else {
        return Release::NotHeld;
    };
    match entry.holds {
        0 | 1 => Release::Removed {
            mode: entry.mode,
            last: mine.count() == 1,
        },
        holds => Release::Decremented {
            mode: entry.mode,
            holds: holds - 1,
        },
    }
}

/// What an ACQUIRE does on a node with waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// As [`Acquire`]: available, and nobody is ranked ahead.
    Grant,
    Downgrade {
        token: u64,
    },
    Renew {
        token: u64,
        holds: u16,
    },
    /// Revoke these tentative entries, then grant.
    Wound {
        victims: Vec<Victim>,
    },
    /// Queue the request.
    Enqueue,
    /// Not available and not waiting: nil.
    Contended,
    WrongKind {
        is: Kind,
    },
    UpgradeRefused,
    HoldLimit,
}

/// An entry a wound revokes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victim {
    pub owner: Vec<u8>,
    pub mode: Mode,
}

impl Victim {
    fn of(h: &Holder<'_>) -> Victim {
        Victim {
            owner: h.owner.to_vec(),
            mode: h.mode,
        }
    }
}

/// The ACQUIRE `req` on a resource with these holders, tentative marks and queue.
pub fn decide<W>(
    h: &impl Holders,
    marks: &Tentatives,
    queue: &Queue<W>,
    req: &Request<'_>,
) -> Decision {
    let not_available = if req.wait {
        Decision::Enqueue
    } else {
        Decision::Contended
    };
    match acquire(h, req.owner, req.want, req.reentrant) {
        Acquire::Grant if queue.has_ahead(req.rank) => not_available,
        Acquire::Grant => Decision::Grant,
        Acquire::Downgrade { token } => Decision::Downgrade { token },
        Acquire::Renew { token, holds } => Decision::Renew { token, holds },
        // A wound never jumps the queue either: with a waiter ranked ahead (a set waiting for
        // another of its keys, say), the request waits its turn.
        Acquire::Contended => match req.ticket {
            Some(ticket) if !queue.has_ahead(req.rank) => {
                match wound_victims(h, marks, req.want, ticket) {
                    Some(victims) => Decision::Wound { victims },
                    None => not_available,
                }
            }
            _ => not_available,
        },
        Acquire::WrongKind { is } => Decision::WrongKind { is },
        Acquire::UpgradeRefused => Decision::UpgradeRefused,
        Acquire::HoldLimit => Decision::HoldLimit,
    }
}

/// The entries a request with `ticket` may revoke so that it can be granted: only tentative
/// grants made for larger tickets, and only if revoking them is enough. A permit needs one place
/// (the largest ticket's); an exclusive request needs every holder gone; a shared request only
/// the exclusive one. `None`: no wound. Costs the number of marks looked at, never a walk of
/// the holders.
pub fn wound_victims(
    h: &impl Holders,
    marks: &Tentatives,
    want: Want,
    ticket: u64,
) -> Option<Vec<Victim>> {
    let woundable = |e: &Holder<'_>| marks.ticket_of(e).is_some_and(|t| ticket < t);
    match want {
        Want::Permit { .. } => marks
            .above(ticket)
            .find_map(|(_, owner)| h.mine(owner).permit.filter(woundable))
            .map(|e| vec![Victim::of(&e)]),
        Want::Shared => h
            .exclusive()
            .filter(woundable)
            .map(|e| vec![Victim::of(&e)]),
        Want::Exclusive => {
            // Every live entry must be tentative for a larger ticket: the marks above `ticket`
            // must describe exactly `count` live entries.
            let count = h.count();
            let mut victims = Vec::new();
            for (_, owner) in marks.above(ticket) {
                let mine = h.mine(owner);
                victims.extend(mine.iter().filter(woundable).map(|e| Victim::of(&e)));
            }
            (count > 0 && victims.len() == count).then_some(victims)
        }
    }
}

/// What a handoff does with the waiter at the head of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    /// Grant it (a fresh entry, or a downgrade keeping `token`).
    Grant { downgrade: Option<u64> },
    /// It can never be granted while the resource is this kind: answer it with the error.
    WrongKind { is: Kind },
    /// Not yet: it keeps its place, and so does everyone behind it.
    Wait,
}

/// Whether the head waiter (`owner` asking `want`) is served now. Called again after each
/// grant, so consecutive shared waiters are granted together and a semaphore fills its places
/// in order.
pub fn serve_head(h: &impl Holders, owner: &[u8], want: Want) -> Serve {
    match acquire(h, owner, want, false) {
        Acquire::Grant => Serve::Grant { downgrade: None },
        Acquire::Downgrade { token } => Serve::Grant {
            downgrade: Some(token),
        },
        Acquire::WrongKind { is } => Serve::WrongKind { is },
        _ => Serve::Wait,
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
