//! What ACQUIRE, RELEASE and EXTEND do to one lock. Token issuance and FENCE need the node's
//! counter and live in [`crate::node`].

/// Longest owner accepted, in bytes.
pub const MAX_OWNER_LEN: usize = 256;
/// Largest reentrant hold count (16 bits keep a stored lock small).
pub const MAX_HOLDS: u16 = u16::MAX;

/// A lock as stored on a node, borrowed from wherever it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held<'a> {
    pub owner: &'a [u8],
    pub token: u64,
    pub holds: u16,
    /// Unix milliseconds. Authoritative: past it the lock is free whatever the key's TTL says.
    pub deadline_ms: u64,
}

impl Held<'_> {
    pub fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.deadline_ms
    }
}

/// The stored lock if it still holds at `now_ms`, else `None` (free).
pub fn live(stored: Option<Held<'_>>, now_ms: u64) -> Option<Held<'_>> {
    stored.filter(|lock| lock.is_live(now_ms))
}

/// What ACQUIRE should do. Issuing a token for [`Acquire::Grant`] is the node's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Free: grant with a fresh token.
    Grant,
    /// Already ours: keep the token, store `holds`, reset the deadline.
    Renew { token: u64, holds: u16 },
    /// Held by another owner.
    Contended,
    /// REENTRANT would overflow the hold count.
    HoldLimit,
}

/// `held` is the live lock (see [`live`]).
pub fn acquire(held: Option<Held<'_>>, owner: &[u8], reentrant: bool) -> Acquire {
    match held {
        None => Acquire::Grant,
        Some(lock) if lock.owner != owner => Acquire::Contended,
        Some(lock) if !reentrant => Acquire::Renew {
            token: lock.token,
            holds: lock.holds,
        },
        Some(lock) => match lock.holds.checked_add(1) {
            Some(holds) => Acquire::Renew {
                token: lock.token,
                holds,
            },
            None => Acquire::HoldLimit,
        },
    }
}

/// What a FENCE did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// Not held by this owner: nothing changed (the commit is refused).
    NotHeld,
    /// Store `token` as the lock's token; the counter is at least `token`.
    Fenced { token: u64 },
    /// The token is below the lock's current token: refused, FENCE never lowers a token.
    Lowers { current: u64 },
    /// The token is beyond what this node accepts from a client.
    TooFarAhead { limit: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    NotHeld,
    /// Still held by the same owner with fewer holds.
    Decremented {
        holds: u16,
    },
    /// Last hold released: remove the lock.
    Removed,
}

pub fn release(held: Option<Held<'_>>, owner: &[u8]) -> Release {
    match held {
        Some(lock) if lock.owner == owner && lock.holds > 1 => Release::Decremented {
            holds: lock.holds - 1,
        },
        Some(lock) if lock.owner == owner => Release::Removed,
        _ => Release::NotHeld,
    }
}

/// Extension never resurrects: a lock past its deadline is not `held` any more.
pub fn may_extend(held: Option<Held<'_>>, owner: &[u8]) -> bool {
    matches!(held, Some(lock) if lock.owner == owner)
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
