//! One holder of a resource, whichever storage form keeps it: who holds, how, and its lease —
//! what the key layer's writes take and give back, what replication sends and the RDB codec
//! reads. Above the key layer a resource is only ever these (see [`super::key`]).

use dlock_core::{Holder, Mode};

/// What a holder has: what a write changes in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub token: u64,
    pub holds: u16,
    /// Unix ms: past it the holder holds nothing.
    pub deadline_ms: u64,
}

/// One stored holder: who holds, how, and its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub owner: Box<[u8]>,
    pub mode: Mode,
    pub lease: Lease,
}

impl Slot {
    pub fn holder(&self) -> Holder<'_> {
        Holder {
            owner: &self.owner,
            mode: self.mode,
            token: self.lease.token,
            holds: self.lease.holds,
            deadline_ms: self.lease.deadline_ms,
        }
    }
}

/// Why a holder cannot join the stored ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// The owner already has an entry in this mode.
    Duplicate,
    /// A permit in a read/write lock, or a lock's entry in a semaphore.
    WrongKind,
    /// A semaphore already holds its limit of permits.
    Full,
    /// An exclusive entry beside another owner's entries.
    Exclusive,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conflict::Duplicate => "one owner twice in one mode",
            Conflict::WrongKind => {
                "a permit in a read/write lock, or a lock's holder in a semaphore"
            }
            Conflict::Full => "a semaphore holds only its limit of permits",
            Conflict::Exclusive => "an exclusive holder beside another owner",
        })
    }
}

/// The `DLOCK.APPLY` option naming a holder's mode.
pub fn mode_word(mode: Mode) -> &'static std::ffi::CStr {
    match mode {
        Mode::Exclusive => c"EXCLUSIVE",
        Mode::Shared => c"SHARED",
        Mode::Permit => c"LIMIT", // followed by the limit
    }
}
