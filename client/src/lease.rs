//! A held lock's lease, one for its guard, its watchdog and the work running under it: when its
//! validity ends, whether it is known lost, and, while a watchdog keeps it, its renew deadline.
//!
//! Why one shared lease: the watchdog used to keep the validity it extended to itself, so the
//! guard's `validity()` ran down to zero while the lock was still kept; and "lost" was only the
//! watchdog task's signal, so a process resumed after a pause past its renew deadline could ask
//! `is_lost()` and hear "no" until that task had run. Now an extension moves the validity for
//! everyone, and past the renew deadline a watched lease is lost by the clock, whichever task
//! looks first (the lease-loss contract, renewal.rs).
//!
//! The lease also carries the hold's token and the commit it may owe (commit.rs): the guard,
//! its watchdogs and the work's contexts read one token, and whoever reads first pays for the
//! one commit the others wait on.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, Shared};
use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::calls::Calls;
use crate::commit::{Commit, Outcome};
use crate::errors::Error;
use crate::renewal::renew_margin;
use crate::timing::validity;

#[derive(Clone, Copy)]
struct Ends {
    valid_until: Instant,
    /// The TTL the nodes were last given (the acquire's, or the last extension's).
    ttl: Duration,
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
    token: Arc<Token>,
    /// Held by every write of the nodes' TTL (an extension, the watchdog's, the commit) from
    /// before its requests go out until its outcome is applied: the nodes keep the write that
    /// arrives last, so the lease must apply them in the order they were sent (issue 50's
    /// adversary: a commit's reply applied after a shorter extension's left the client 9 s of
    /// validity on nodes that held 0.2 s).
    writes: Arc<tokio::sync::Mutex<()>>,
}

/// The hold's token, and the commit it owes before anyone may read it.
struct Token {
    token: u64,
    owed: Option<Owed>,
    /// The one commit, once a read started it: a task of its own, so that a reader that gives up
    /// (a dropped future, a timeout) neither stops it nor makes the next reader start another.
    /// Its outcome: committed (true) or lost.
    commit: Mutex<Option<Shared<BoxFuture<'static, bool>>>>,
}

/// What a commit owed needs: the lock's calls, its owner and the nodes that granted.
pub(crate) struct Owed {
    pub(crate) calls: Calls,
    pub(crate) owner: String,
    pub(crate) holding: Vec<usize>,
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
    /// The lease of a hold of `token` (owing the commit `owed`, if any), valid until
    /// `valid_until` under a TTL of `ttl`.
    pub(crate) fn new(
        backend: Arc<Backend>,
        (valid_until, ttl): (Instant, Duration),
        token: u64,
        owed: Option<Owed>,
    ) -> Lease {
        Lease {
            ends: Arc::new(Mutex::new(Ends {
                valid_until,
                ttl,
                renew_by: None,
            })),
            lost: CancellationToken::new(),
            backend,
            token: Arc::new(Token {
                token,
                owed,
                commit: Mutex::new(None),
            }),
            writes: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// One write of the nodes' TTL at a time (see the field): hold the guard from before the
    /// requests are sent until the outcome is applied.
    pub(crate) async fn writing(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.writes.clone().lock_owned().await
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
        ends.ttl = ttl;
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

    /// The token once it may leave the client: at once when no commit is owed or it ran; else
    /// after the one commit (docs/protocol.md §4.1), which every reader shares. A commit that
    /// fails, or a lease already over, makes the lock lost: [`Error::LockLost`], then and on
    /// every later read.
    pub(crate) async fn token(&self, resource: &str) -> Result<u64, Error> {
        if self.token.owed.is_none() || self.commit_once().await {
            return Ok(self.token.token);
        }
        Err(Error::LockLost {
            resource: resource.to_string(),
        })
    }

    fn commit_slot(&self) -> MutexGuard<'_, Option<Shared<BoxFuture<'static, bool>>>> {
        self.token
            .commit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The one commit: started by the first read, shared by every other.
    fn commit_once(&self) -> Shared<BoxFuture<'static, bool>> {
        let mut slot = self.commit_slot();
        let commit = slot.get_or_insert_with(|| {
            let lease = self.clone();
            let task = tokio::spawn(async move { lease.commit().await });
            async move { task.await.unwrap_or(false) }.boxed().shared()
        });
        commit.clone()
    }

    /// The token if it may leave the client now (no commit owed, or committed), for display.
    pub(crate) fn committed_token(&self) -> Option<u64> {
        let committed = self.commit_slot().as_ref().and_then(|c| c.peek().copied());
        let done = self.token.owed.is_none() || committed == Some(true);
        done.then_some(self.token.token)
    }

    /// Once the lock is released, an owed commit is never sent: reading fails as lost.
    pub(crate) fn close(&self) {
        let mut slot = self.commit_slot();
        slot.get_or_insert_with(|| futures::future::ready(false).boxed().shared());
    }

    /// FENCE on every node that granted, the lease set afresh; stops at the first outcome.
    async fn commit(&self) -> bool {
        let Some(owed) = &self.token.owed else {
            return true;
        };
        let _write = self.writing().await;
        if self.is_lost() || self.validity().is_zero() {
            self.lose(); // the lease may be someone else's by now
            return false;
        }
        let (token, ttl, started) = (self.token.token, self.ends().ttl, self.now());
        let nodes = self.backend.nodes();
        let needed = owed.calls.kind().quorum(nodes);
        let (mut commit, asked) = Commit::start(nodes, needed, token, &owed.holding);
        let mut replies: FuturesUnordered<_> = (asked.into_iter())
            .map(|n| async move {
                let reply = owed.calls.fence(n, &owed.owner, token, Some(ttl)).await;
                (n, reply.is_ok())
            })
            .collect();
        while commit.outcome() == Outcome::Pending {
            let Some((node, committed)) = replies.next().await else {
                break;
            };
            commit.on_fenced(node, committed);
        }
        let drift = &self.backend.opts.rounds.drift;
        let left = validity(ttl, started, self.now(), drift);
        match (commit.outcome(), left) {
            (Outcome::Committed(_), Some(left)) => {
                self.extended(self.now() + left, ttl);
                true
            }
            _ => {
                // A FENCE still out may land later and keep the lost lock for a whole TTL.
                self.lose();
                let (calls, owner) = (owed.calls.clone(), owed.owner.clone());
                self.backend.spawn(async move {
                    calls.release(&owner).await;
                });
                false
            }
        }
    }
}
