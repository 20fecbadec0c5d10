//! Counters behind `INFO dlock`. Atomics, because Redis may free values on its lazyfree thread.
//! They saturate at `u64::MAX` instead of wrapping.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub static GRANTS: AtomicU64 = AtomicU64::new(0);
pub static CONTENDED: AtomicU64 = AtomicU64::new(0);
pub static RELEASES: AtomicU64 = AtomicU64::new(0);
pub static EXTENDS: AtomicU64 = AtomicU64::new(0);
pub static FENCES: AtomicU64 = AtomicU64::new(0);
pub static FORCED: AtomicU64 = AtomicU64::new(0);
pub static EXPIRED: AtomicU64 = AtomicU64::new(0);
/// Grants refused because the eviction policy could drop lock keys.
pub static EVICTION_REFUSALS: AtomicU64 = AtomicU64::new(0);
/// Locks handed to a waiter.
pub static HANDOFFS: AtomicU64 = AtomicU64::new(0);
/// Waits that ended at their timeout.
pub static WAIT_TIMEOUTS: AtomicU64 = AtomicU64::new(0);
/// Tentative grants revoked for a smaller ticket.
pub static REVOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Values a RESTORE or a load refused (malformed, out of bounds).
pub static REFUSED_VALUES: AtomicU64 = AtomicU64::new(0);
/// Gates that were evicted (or expired: a TTL from an older release) and were stored again.
pub static GATES_REVIVED: AtomicU64 = AtomicU64::new(0);
static CREATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

pub fn count(stat: &AtomicU64) {
    let _ = stat.fetch_update(Relaxed, Relaxed, |n| n.checked_add(1));
}

/// Adds `n`, saturating.
pub fn count_n(stat: &AtomicU64, n: usize) {
    let n = u64::try_from(n).unwrap_or(u64::MAX);
    let _ = stat.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_add(n)));
}

pub fn get(stat: &AtomicU64) -> u64 {
    stat.load(Relaxed)
}

/// A lock value entered the keyspace (grant, load, replication).
pub fn lock_created() {
    count(&CREATED);
}

/// A lock value was freed (release, expiry, DEL, flush, overwrite).
pub fn lock_freed() {
    count(&FREED);
}

/// Lock values in the keyspace now (expired ones count until Redis reclaims them).
pub fn locks_held() -> u64 {
    get(&CREATED).saturating_sub(get(&FREED))
}
