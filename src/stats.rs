//! Counters behind `INFO dlock`. Atomics, because Redis may free values on its lazyfree thread.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub static GRANTS: AtomicU64 = AtomicU64::new(0);
pub static CONTENDED: AtomicU64 = AtomicU64::new(0);
pub static RELEASES: AtomicU64 = AtomicU64::new(0);
pub static EXTENDS: AtomicU64 = AtomicU64::new(0);
pub static FENCES: AtomicU64 = AtomicU64::new(0);
pub static FORCED: AtomicU64 = AtomicU64::new(0);
pub static EXPIRED: AtomicU64 = AtomicU64::new(0);
static CREATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

pub fn count(stat: &AtomicU64) {
    stat.fetch_add(1, Relaxed);
}

pub fn get(stat: &AtomicU64) -> u64 {
    stat.load(Relaxed)
}

/// A lock value entered the keyspace (grant, load, replication).
pub fn lock_created() {
    CREATED.fetch_add(1, Relaxed);
}

/// A lock value was freed (release, expiry, DEL, flush, overwrite).
pub fn lock_freed() {
    FREED.fetch_add(1, Relaxed);
}

/// Lock values in the keyspace now (expired ones count until Redis reclaims them).
pub fn locks_held() -> u64 {
    get(&CREATED).saturating_sub(get(&FREED))
}
