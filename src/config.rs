//! The module's `dlock.*` settings: registered with Redis's module config API, so they work in
//! redis.conf, on the command line and with CONFIG SET / CONFIG GET.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::lock::Settings;

pub const DEFAULT_MAX_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Upper bound of both duration settings: ten years, far from any overflow of unix ms.
pub const LIMIT_MS: i64 = 10 * 365 * 24 * 60 * 60 * 1000;

/// `dlock.max-ttl-ms`: the largest TTL a client may ask for.
pub static MAX_TTL_MS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_TTL_MS);
/// `dlock.quarantine-ms`: no new grants for this long after the module loads.
pub static QUARANTINE_MS: AtomicI64 = AtomicI64::new(0);
/// `dlock.clock-floor`: floor tokens with the wall clock in microseconds.
pub static CLOCK_FLOOR: AtomicBool = AtomicBool::new(true);

pub fn max_ttl_ms() -> i64 {
    MAX_TTL_MS.load(Ordering::Relaxed)
}

pub fn settings() -> Settings {
    Settings {
        quarantine_ms: QUARANTINE_MS.load(Ordering::Relaxed).max(0) as u64,
        clock_floor: CLOCK_FLOOR.load(Ordering::Relaxed),
    }
}
