//! A held lock ([`LockGuard`]), its auto-extension ([`Watchdog`]) and what work running under
//! it can see ([`LockContext`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::calls::{Calls, Tally};
use crate::checks::check_lease;
use crate::driver::Granted;
use crate::errors::Error;
use crate::kind::LockKind;
use crate::lease::{Lease, Owed};
use crate::renewal::{renewal, Extension, Renewal};
use crate::timing::quorum as majority;

/// A lock held on a majority. Release it with [`LockGuard::release`]; dropping it releases in
/// the background (best effort) if a Tokio runtime is running.
pub struct LockGuard {
    /// The lock's calls (its nodes, name and kind).
    calls: Calls,
    owner: String,
    /// Validity, loss signal, renew deadline and the token (with the commit it may owe), shared
    /// with the watchdog and the work's context.
    lease: Lease,
    acquired_at: Instant,
    released: bool,
    /// Cancelled before the release goes out: waits of the acquisition still out in the
    /// background then know any grant they get is stale (queue mode).
    on_release: Option<CancellationToken>,
    /// Cancelled before the release goes out: stops every watchdog of this guard, so that no
    /// extension is sent after the release.
    halt: CancellationToken,
}

impl LockGuard {
    /// The guard of a hold won through `calls` (a lock's, or a set's).
    pub(crate) fn new(calls: Calls, owner: &str, granted: Granted) -> Self {
        let backend = calls.backend().clone();
        let acquired_at = backend.clock.now();
        let owed = granted.owes_commit.map(|holding| Owed {
            calls: calls.clone(),
            owner: owner.to_string(),
            holding,
        });
        let ends = (granted.valid_until, granted.ttl);
        let lease = Lease::new(backend, ends, granted.token, owed);
        LockGuard {
            calls,
            owner: owner.to_string(),
            lease,
            acquired_at,
            released: false,
            on_release: None,
            halt: CancellationToken::new(),
        }
    }

    /// Signals `token` when this lock is released (see the field).
    pub(crate) fn signalling(mut self, token: CancellationToken) -> Self {
        self.on_release = Some(token);
        self
    }

    fn signal_release(&self) {
        self.lease.close();
        self.halt.cancel();
        if let Some(token) = &self.on_release {
            token.cancel();
        }
    }

    /// The fencing token: pass it to the protected resource, which must reject lower ones.
    ///
    /// A lock taken without waiting on the nodes (`try_lock`, retry mode) with several nodes
    /// commits its token on a quorum only now, on the first read (one `FENCE` round, shared by
    /// every reader; docs/protocol.md §4.1): a token leaves the client only once committed. A
    /// commit that fails, or a lease already over, makes the lock lost: [`Error::LockLost`].
    pub async fn token(&self) -> Result<u64, Error> {
        self.lease.token(self.resource()).await
    }

    /// The owner name this lock is held under on the nodes (32 hex digits and `:round`): what
    /// `dlock release RESOURCE OWNER` or [`LockManager::release_owner`] take.
    ///
    /// [`LockManager::release_owner`]: crate::LockManager::release_owner
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The resource's name.
    pub fn resource(&self) -> &str {
        self.calls.resource()
    }

    /// How it is held: exclusively, shared, or as a semaphore's permit.
    pub fn kind(&self) -> LockKind {
        self.calls.kind()
    }

    fn backend(&self) -> &Arc<Backend> {
        self.calls.backend()
    }

    /// Nodes an extension must reach: the kind's quorum.
    fn needed(&self) -> usize {
        self.kind().quorum(self.backend().nodes())
    }

    /// Time left before the lock may be held by someone else (zero when over, or once the lock
    /// is known lost).
    pub fn validity(&self) -> Duration {
        self.lease.validity()
    }

    /// True once the lock is known lost: a guarded write found a newer holder's token at its
    /// gate ([`LockGuard::guarded`]), or, while a watchdog keeps it, no quorum confirmed an
    /// extension by its renew deadline (told by the clock, even before the watchdog has run).
    pub fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    pub(crate) fn lost_signal(&self) -> &CancellationToken {
        self.lease.signal()
    }

    /// What work under this lock sees: token, owner and the loss signal.
    pub(crate) fn context(&self) -> LockContext {
        LockContext {
            owner: self.owner.clone(),
            resource: self.resource().to_string(),
            lease: self.lease.clone(),
        }
    }

    /// Holds the lock under `owner` from now on (`DLOCK.PROCLAIM`, keeping token and lease):
    /// when a quorum did not take it, the nodes that did are turned back and the error says why.
    pub(crate) async fn rename(&mut self, owner: &str) -> Result<(), Error> {
        if owner == self.owner {
            return Ok(());
        }
        let token = self.token().await?;
        let tally = self.calls.proclaim(&self.owner, token, owner).await;
        if tally.done >= self.needed() {
            self.owner = owner.to_string();
            return Ok(());
        }
        self.calls.proclaim(owner, token, &self.owner).await;
        Err(tally.extend_error(self.resource(), self.needed()))
    }

    /// Resets the TTL on all nodes. Fails with [`Error::NoQuorum`] if too few nodes answered,
    /// or [`Error::LockLost`] if they answered but a majority did not extend within the new
    /// validity. After a failure [`LockGuard::validity`] still tells how long the earlier grant
    /// lasts.
    pub async fn extend(&mut self, ttl: Duration) -> Result<(), Error> {
        check_lease(ttl, &self.backend().opts.rounds.drift)?;
        if self.is_lost() {
            // A newer holder wrote: extending would only keep a lease nobody may use.
            return Err(Error::LockLost {
                resource: self.resource().to_string(),
            });
        }
        let _write = self.lease.writing().await;
        match self.calls.extend(&self.owner, ttl).await {
            Ok(valid_until) => {
                self.lease.extended(valid_until, ttl);
                Ok(())
            }
            Err(tally) => Err(tally.extend_error(self.resource(), self.needed())),
        }
    }

    /// Releases on all nodes; fails with [`Error::NoQuorum`] naming the unreachable nodes if
    /// fewer than a majority answered (the lock then lingers there until its TTL).
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.signal_release();
        let tally = self.calls.release(&self.owner).await;
        let needed = majority(self.backend().nodes());
        if tally.answered() >= needed {
            return Ok(());
        }
        Err(tally.no_quorum(self.resource(), needed))
    }

    /// Keeps the lock held after the guard is gone (no release on drop): for handing it to
    /// another process, as `dlock acquire` does. Returns (owner, token, validity), the token
    /// committed first ([`LockGuard::token`]); on [`Error::LockLost`] the lock is released.
    pub async fn detach(mut self) -> Result<(String, u64, Duration), Error> {
        let token = match self.token().await {
            Ok(token) => token,
            Err(e) => {
                let _ = self.release().await;
                return Err(e);
            }
        };
        self.released = true;
        Ok((self.owner.clone(), token, self.validity()))
    }

    /// Starts extending this lock every `extend_interval` (default ttl / 3) until stopped, or
    /// until `max_hold` after it was acquired (then the loss signal fires).
    pub fn watchdog(&self, ttl: Duration) -> Watchdog {
        let opts = &self.backend().opts;
        let interval = opts.extend_interval.unwrap_or(ttl / 3);
        let stop = self.halt.child_token();
        let schedule = Schedule {
            ttl,
            interval: interval.max(Duration::from_millis(1)),
            hold_until: opts.max_hold.map(|cap| self.acquired_at + cap),
        };
        self.lease.watched(Some(ttl));
        let task = tokio::spawn(keep_extended(
            self.calls.clone(),
            self.owner.clone(),
            schedule,
            (self.lease.clone(), stop.clone()),
        ));
        Watchdog {
            context: self.context(),
            stop,
            task,
        }
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("resource", &self.resource())
            .field("owner", &self.owner)
            .field("token", &self.lease.committed_token())
            .field("validity", &self.validity())
            .finish()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        self.signal_release();
        let (calls, owner) = (self.calls.clone(), self.owner.clone());
        self.backend().spawn(async move {
            calls.release(&owner).await;
        });
    }
}

/// When the watchdog acts.
struct Schedule {
    ttl: Duration,
    interval: Duration,
    /// `max_hold` after acquisition: no extension past it.
    hold_until: Option<Instant>,
}

/// The watchdog loop, by the lease-loss contract (renewal.rs): extend every interval; the lease
/// is lost at its renew deadline unless a quorum confirmed an extension first, at once when the
/// nodes refuse one, or once the hold cap is reached (the lock then runs out at its TTL).
async fn keep_extended(
    calls: Calls,
    owner: String,
    at: Schedule,
    (lease, stop): (Lease, CancellationToken),
) {
    let backend = calls.backend().clone();
    let clock = &backend.clock;
    let lost = lease.signal().clone();
    let mut last = Extension::Extended;
    loop {
        let now = clock.now();
        let left = lease.valid_until().saturating_duration_since(now);
        let Renewal::ExtendIn(pause) = renewal(at.ttl, at.interval, left, last) else {
            return lease.lose();
        };
        let capped = at.hold_until.filter(|&cap| now + pause >= cap);
        let pause = capped.map_or(pause, |cap| cap.saturating_duration_since(now));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = lost.cancelled() => return, // a guarded write found a newer holder
            _ = tokio::time::sleep(pause) => {}
        }
        if capped.is_some() {
            return lease.lose();
        }
        let renew_by = lease.renew_by().unwrap_or_else(|| lease.valid_until());
        let until_deadline = renew_by.saturating_duration_since(clock.now());
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = lost.cancelled() => return,
            _ = tokio::time::sleep(until_deadline) => return lease.lose(),
            extended = extend_once(&calls, &owner, at.ttl, &lease) => last = match extended {
                // Confirmed after the deadline is too late: the lease counts as lost already.
                Ok(()) if lease.is_lost() => return,
                Ok(()) => Extension::Extended,
                Err(tally) => outcome(&calls, &tally),
            },
        }
    }
}

/// One extension of the watchdog's, applied to the lease unless it came too late (lost),
/// as one write of the lease (`Lease::writing`).
async fn extend_once(
    calls: &Calls,
    owner: &str,
    ttl: Duration,
    lease: &Lease,
) -> Result<(), Tally> {
    let _write = lease.writing().await;
    let until = calls.extend(owner, ttl).await?;
    if !lease.is_lost() {
        lease.extended(until, ttl);
    }
    Ok(())
}

/// An extension that was not confirmed: refused when so many nodes said "not held" that no
/// quorum is left to extend it.
fn outcome(calls: &Calls, tally: &Tally) -> Extension {
    let nodes = calls.backend().nodes();
    let needed = calls.kind().quorum(nodes);
    if tally.refused > nodes.saturating_sub(needed) {
        Extension::Refused
    } else {
        Extension::Unconfirmed
    }
}

/// A running auto-extension. [`Watchdog::stop`] ends it and tells whether the lock was lost.
pub struct Watchdog {
    context: LockContext,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Watchdog {
    /// What the protected work sees: token, owner, and the loss signal.
    pub fn context(&self) -> LockContext {
        self.context.clone()
    }

    /// Stops extending; returns true if the lock was lost before that.
    pub async fn stop(self) -> bool {
        self.stop.cancel();
        let _ = self.task.await;
        let lost = self.context.is_lost();
        // No watchdog keeps it now: no renew deadline, the lease ends with its validity.
        self.context.lease.watched(None);
        lost
    }
}

/// Handed to work running under a lock.
#[derive(Clone, Debug)]
pub struct LockContext {
    owner: String,
    resource: String,
    lease: Lease,
}

impl LockContext {
    /// The lock's fencing token, committed first when a commit is owed (see
    /// [`LockGuard::token`]).
    pub async fn token(&self) -> Result<u64, Error> {
        self.lease.token(&self.resource).await
    }

    /// The owner name the lock is held under.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The resource's name.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// True once the lock is lost (see [`LockGuard::is_lost`]).
    pub fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Resolves when the lock is lost: `tokio::select!` on it to stop work at once.
    pub async fn lost(&self) {
        self.lease.signal().cancelled().await
    }

    /// The same signal as a cancellation token, to hand to other tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.lease.signal().clone()
    }
}
