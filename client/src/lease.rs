//! A held lock's lease, one for its guard, its watchdog and the work running under it: when its
//! validity ends, whether it is known lost, and, while a watchdog keeps it, its renew deadline.
//!
//! Why one shared lease: the watchdog used to keep the validity it extended to itself, so the
//! guard's `validity()` ran down to zero while the lock was still kept; and "lost" was only the
//! watchdog task's signal, so a process resumed after a pause past its renew deadline could ask
//! `is_lost()` and hear "no" until that task had run. Now an extension moves the validity for
//! everyone, and past the renew deadline a watched lease is lost by the clock, whichever task
//! looks first (the lease-loss contract, renewal.rs).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::renewal::renew_margin;

#[derive(Clone, Copy)]
struct Ends {
    valid_until: Instant,
    /// Set while a watchdog keeps the lease: past it, without a confirmed extension, it is lost.
    renew_by: Option<Instant>,
}

#[derive(Clone)]
pub(crate) struct Lease {
    ends: Arc<Mutex<Ends>>,
    /// Fired once when the lease is known lost (a guarded write answered STALE, the watchdog
    /// gave it up, or its renew deadline passed).
    lost: CancellationToken,
    backend: Arc<Backend>,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ends = *self.ends();
        f.debug_struct("Lease")
            .field("valid_until", &ends.valid_until)
            .field("renew_by", &ends.renew_by)
            .field("lost", &self.lost.is_cancelled())
            .finish()
    }
}

/// `valid_until` less the renew margin of `ttl` (never before `now`: a deadline already passed
/// stands at `now`).
fn renew_deadline(valid_until: Instant, ttl: Duration, now: Instant) -> Instant {
    let left = valid_until.saturating_duration_since(now);
    valid_until
        .checked_sub(renew_margin(ttl).min(left))
        .unwrap_or(valid_until)
}

impl Lease {
    pub(crate) fn new(backend: Arc<Backend>, valid_until: Instant) -> Lease {
        Lease {
            ends: Arc::new(Mutex::new(Ends {
                valid_until,
                renew_by: None,
            })),
            lost: CancellationToken::new(),
            backend,
        }
    }

    // A panic elsewhere while holding the lock leaves plain data that is still right to read.
    fn ends(&self) -> MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Instant {
        self.backend.clock.now()
    }

    pub(crate) fn valid_until(&self) -> Instant {
        self.ends().valid_until
    }

    /// The renew deadline while watched (`None` when no watchdog keeps the lease).
    pub(crate) fn renew_by(&self) -> Option<Instant> {
        self.ends().renew_by
    }

    /// An extension was confirmed until `valid_until`; a watched lease's renew deadline moves
    /// with it.
    pub(crate) fn extended(&self, valid_until: Instant, ttl: Duration) {
        let now = self.now();
        let mut ends = self.ends();
        ends.valid_until = valid_until;
        if ends.renew_by.is_some() {
            ends.renew_by = Some(renew_deadline(valid_until, ttl, now));
        }
    }

    /// A watchdog starts keeping the lease (`Some(ttl)`), or stops (`None`).
    pub(crate) fn watched(&self, ttl: Option<Duration>) {
        let now = self.now();
        let mut ends = self.ends();
        ends.renew_by = ttl.map(|ttl| renew_deadline(ends.valid_until, ttl, now));
    }

    /// Known lost, or watched and past its renew deadline (then the loss signal fires now).
    pub(crate) fn is_lost(&self) -> bool {
        if self.lost.is_cancelled() {
            return true;
        }
        let overdue = self.renew_by().is_some_and(|by| self.now() >= by);
        if overdue {
            self.lost.cancel();
        }
        overdue
    }

    pub(crate) fn lose(&self) {
        self.lost.cancel();
    }

    pub(crate) fn signal(&self) -> &CancellationToken {
        &self.lost
    }

    /// Time left before the lock may be held by someone else (zero once known lost).
    pub(crate) fn validity(&self) -> Duration {
        if self.is_lost() {
            return Duration::ZERO;
        }
        self.valid_until().saturating_duration_since(self.now())
    }
}
