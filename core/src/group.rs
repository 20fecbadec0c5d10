//! Resources with several holders: read/write locks (one exclusive holder, or any number of
//! shared ones) and counting semaphores (at most `limit` holders). Each holder has its own
//! owner, fencing token, hold count and lease; a holder whose lease ended holds nothing.
//!
//! A resource has one kind while anyone holds it: a lock (exclusive and shared holders) or a
//! semaphore of one limit. Asking it as another kind is refused, never converted. An owner holds
//! at most one entry per mode: an exclusive holder that also takes the shared side (a downgrade)
//! holds both, and its RELEASE drops the exclusive entry first.

use crate::wait::{Queue, Request};

/// Largest semaphore limit: a resource's holders are scanned on every change, so the limit
/// bounds each command's work.
pub const MAX_LIMIT: u32 = 10_000;

/// How a holder holds a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Exclusive,
    Shared,
    Permit,
}

/// What a resource is while held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A read/write lock: exclusive and shared holders.
    Lock,
    Semaphore {
        limit: u32,
    },
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Want {
    #[default]
    Exclusive,
    Shared,
    Permit {
        limit: u32,
    },
}

impl Want {
    pub fn kind(self) -> Kind {
        match self {
            Want::Exclusive | Want::Shared => Kind::Lock,
            Want::Permit { limit } => Kind::Semaphore { limit },
        }
    }

    pub fn mode(self) -> Mode {
        match self {
            Want::Exclusive => Mode::Exclusive,
            Want::Shared => Mode::Shared,
            Want::Permit { .. } => Mode::Permit,
        }
    }
}

/// One live holder, borrowed from wherever it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub owner: &'a [u8],
    pub mode: Mode,
    pub token: u64,
    pub holds: u16,
    /// Unix milliseconds: past it the entry holds nothing.
    pub deadline_ms: u64,
}

/// What ACQUIRE does to a resource with several holders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Add an entry for the owner with a fresh token.
    Grant,
    /// The owner holds it exclusively and asks for the shared side: add a shared entry with the
    /// exclusive entry's token (the same hold goes on).
    Downgrade { token: u64 },
    /// The owner already holds it in this mode: keep the token, store `holds`, new deadline.
    Renew { token: u64, holds: u16 },
    /// Not available to this owner now.
    Contended,
    /// The resource is another kind while held.
    WrongKind { is: Kind },
    /// A shared holder asked for exclusive: two readers upgrading would wait for each other
    /// forever, so it is refused.
    UpgradeRefused,
    /// REENTRANT would overflow the hold count.
    HoldLimit,
}

/// The kind of a resource with these live holders; `None` when nobody holds it.
pub fn kind_of(live: &[Entry<'_>], limit: u32) -> Option<Kind> {
    let first = live.first()?;
    Some(match first.mode {
        Mode::Permit => Kind::Semaphore { limit },
        Mode::Exclusive | Mode::Shared => Kind::Lock,
    })
}

/// `live` are the live holders; `kind` the resource's kind while they hold it.
pub fn acquire(
    kind: Option<Kind>,
    live: &[Entry<'_>],
    owner: &[u8],
    want: Want,
    reentrant: bool,
) -> Acquire {
    if let Some(is) = kind.filter(|&is| is != want.kind()) {
        return Acquire::WrongKind { is };
    }
    let mine = |mode: Mode| live.iter().find(|e| e.owner == owner && e.mode == mode);
    if let Some(entry) = mine(want.mode()) {
        return renew(entry, reentrant);
    }
    match want {
        Want::Exclusive if mine(Mode::Shared).is_some() => Acquire::UpgradeRefused,
        Want::Exclusive if live.is_empty() => Acquire::Grant,
        Want::Shared => match mine(Mode::Exclusive) {
            Some(exclusive) => Acquire::Downgrade {
                token: exclusive.token,
            },
            None if live.iter().any(|e| e.mode == Mode::Exclusive) => Acquire::Contended,
            None => Acquire::Grant,
        },
        Want::Permit { limit } if live.len() < limit as usize => Acquire::Grant,
        _ => Acquire::Contended,
    }
}

fn renew(entry: &Entry<'_>, reentrant: bool) -> Acquire {
    if !reentrant {
        return Acquire::Renew {
            token: entry.token,
            holds: entry.holds,
        };
    }
    match entry.holds.checked_add(1) {
        Some(holds) => Acquire::Renew {
            token: entry.token,
            holds,
        },
        None => Acquire::HoldLimit,
    }
}

/// What RELEASE does: which entry (its index in `live`) and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    NotHeld,
    Decremented { at: usize, holds: u16 },
    Removed { at: usize },
}

/// One hold of the owner's exclusive entry if it has one, else of its shared entry or permit.
pub fn release(live: &[Entry<'_>], owner: &[u8]) -> Release {
    let find = |exclusive: bool| {
        live.iter()
            .position(|e| e.owner == owner && (e.mode == Mode::Exclusive) == exclusive)
    };
    let Some(at) = find(true).or_else(|| find(false)) else {
        return Release::NotHeld;
    };
    match live[at].holds {
        0 | 1 => Release::Removed { at },
        holds => Release::Decremented {
            at,
            holds: holds - 1,
        },
    }
}

/// The indexes in `live` of the owner's entries (what EXTEND and FENCE change).
pub fn entries_of(live: &[Entry<'_>], owner: &[u8]) -> Vec<usize> {
    (0..live.len())
        .filter(|&i| live[i].owner == owner)
        .collect()
}

/// The owner's entry with the largest token (FENCE never lowers any of them).
pub fn newest_of<'a>(live: &[Entry<'a>], owner: &[u8]) -> Option<Entry<'a>> {
    live.iter()
        .filter(|e| e.owner == owner)
        .max_by_key(|e| e.token)
        .copied()
}

/// The holders a ticketed request may revoke so that it can be granted (wound-wait over several
/// holders): only tentative grants made for larger tickets, and only if revoking them is enough.
/// For a semaphore the one with the largest ticket suffices; an exclusive request needs every
/// holder gone; a shared request only the exclusive one. `tentative(e)` is the ticket of `e`'s
/// uncommitted grant, if it is one. `None`: no wound.
pub fn wound_victims(
    live: &[Entry<'_>],
    want: Want,
    ticket: u64,
    tentative: impl Fn(&Entry<'_>) -> Option<u64>,
) -> Option<Vec<usize>> {
    let woundable = |e: &Entry<'_>| tentative(e).is_some_and(|t| ticket < t);
    match want {
        Want::Permit { .. } => (0..live.len())
            .filter(|&i| woundable(&live[i]))
            .max_by_key(|&i| tentative(&live[i]))
            .map(|i| vec![i]),
        Want::Exclusive => {
            let all = live.iter().all(woundable) && !live.is_empty();
            all.then(|| (0..live.len()).collect())
        }
        Want::Shared => {
            let blockers: Vec<usize> = (0..live.len())
                .filter(|&i| live[i].mode == Mode::Exclusive)
                .collect();
            let all = !blockers.is_empty() && blockers.iter().all(|&i| woundable(&live[i]));
            all.then_some(blockers)
        }
    }
}

/// The earliest deadline among the live holders: when a place may free up next.
pub fn next_deadline(live: &[Entry<'_>]) -> Option<u64> {
    live.iter().map(|e| e.deadline_ms).min()
}

/// The latest deadline among the holders: the resource's key lives until then.
pub fn last_deadline(live: &[Entry<'_>]) -> Option<u64> {
    live.iter().map(|e| e.deadline_ms).max()
}

/// What an ACQUIRE does to a resource with several holders on a node with waiting.
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
    /// Revoke these tentative holders (indexes in `live`), then grant.
    Wound {
        victims: Vec<usize>,
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

/// As [`crate::wait::acquire`] for the mutex: a request never jumps the queue (so a queued
/// writer holds back later readers, and a semaphore serves its head first), and a ticketed
/// request may wound tentative grants made for larger tickets. `tentative(e)` is the ticket of
/// `e`'s uncommitted grant, if it is one.
pub fn decide<W>(
    (kind, live): (Option<Kind>, &[Entry<'_>]),
    queue: &Queue<W>,
    req: &Request<'_>,
    want: Want,
    tentative: impl Fn(&Entry<'_>) -> Option<u64>,
) -> Decision {
    let not_available = if req.wait {
        Decision::Enqueue
    } else {
        Decision::Contended
    };
    match acquire(kind, live, req.owner, want, req.reentrant) {
        Acquire::Grant if queue.has_ahead(req.rank) => not_available,
        Acquire::Grant => Decision::Grant,
        Acquire::Downgrade { token } => Decision::Downgrade { token },
        Acquire::Renew { token, holds } => Decision::Renew { token, holds },
        Acquire::Contended => match req.ticket {
            Some(ticket) => match wound_victims(live, want, ticket, tentative) {
                Some(victims) => Decision::Wound { victims },
                None => not_available,
            },
            None => not_available,
        },
        Acquire::WrongKind { is } => Decision::WrongKind { is },
        Acquire::UpgradeRefused => Decision::UpgradeRefused,
        Acquire::HoldLimit => Decision::HoldLimit,
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
pub fn serve_head(kind: Option<Kind>, live: &[Entry<'_>], owner: &[u8], want: Want) -> Serve {
    match acquire(kind, live, owner, want, false) {
        Acquire::Grant => Serve::Grant { downgrade: None },
        Acquire::Downgrade { token } => Serve::Grant {
            downgrade: Some(token),
        },
        Acquire::WrongKind { is } => Serve::WrongKind { is },
        _ => Serve::Wait,
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
