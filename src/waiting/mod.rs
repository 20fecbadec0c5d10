//! Fair waiting inside the server (docs/protocol.md §5): `DLOCK.ACQUIRE ... WAIT` parks the
//! client in a per-key queue in module memory, and the moment a place frees up the waiters in
//! service order get it. The rules (order, tentative grants, wounds) are `dlock_core::rules`';
//! this module keeps the queues, the tentative marks and the parked clients, and decides when to
//! hand off.

mod blocked;
mod cluster;
mod events;
mod handoff;
mod migration;
mod parked;
mod queues;
pub mod sets;

use std::cell::OnceCell;
use std::time::Duration;

use dlock_core::queue::{Queue, Request};
use dlock_core::rules::{self, Decision};
use dlock_core::tentative::Tentatives;
use dlock_core::{Mode, Want};
use redis_module::{raw, Context, RedisError, RedisValue};

pub use cluster::redirect;
pub use events::watch;
pub use queues::{waiters, QueueKey, Wait};

use crate::keyspace::view::View;
use crate::server::selected_db;
use crate::wire::{errors, Arg};
use crate::{config, server};
use parked::Outcome;

/// Whether this call may park its client: never inside MULTI, scripts or functions, for a
/// command replicated from a master or on a replica (as `BLPOP` there).
pub fn may_block(ctx: &Context) -> bool {
    let flags = server::context_flags(ctx.ctx);
    let refused = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
        | raw::REDISMODULE_CTX_FLAGS_REPLICATED
        | raw::REDISMODULE_CTX_FLAGS_SLAVE;
    !server::flag(flags, refused)
}

/// The waiting state of one command's key. Its [`QueueKey`] is built on first use and then kept,
/// and not at all while no key anywhere has waiting state (most commands).
pub struct Waiters<'a> {
    ctx: &'a Context,
    name: &'a Arg,
    key: OnceCell<QueueKey>,
}

impl<'a> Waiters<'a> {
    pub fn of(ctx: &'a Context, name: &'a Arg) -> Waiters<'a> {
        Waiters {
            ctx,
            name,
            key: OnceCell::new(),
        }
    }

    fn key(&self) -> &QueueKey {
        self.key
            .get_or_init(|| (selected_db(self.ctx), self.name.as_bytes().to_vec()))
    }

    /// What an ACQUIRE does here, given the resource's holders, queue and tentative marks.
    pub fn decide(&self, view: &View<'_>, req: &Request<'_>) -> Decision {
        // Nobody waits here: the empty queue and marks are statics, never built or dropped.
        static NO_QUEUE: Queue<()> = Queue::new();
        static NO_MARKS: Tentatives = Tentatives::NONE;
        let none = || rules::decide(view, &NO_MARKS, &NO_QUEUE, req);
        if queues::idle() {
            return none();
        }
        queues::peek(self.key(), |state| match state {
            Some(s) => rules::decide(view, &s.marks, &s.queue, req),
            None => none(),
        })
    }

    /// A grant to `owner` stays tentative until FENCE commits it if `ticket`ed; a grant of the
    /// whole resource (`alone`: an exclusive one) ends every earlier mark.
    pub fn granted(&self, owner: &[u8], (token, ticket): (u64, Option<u64>), alone: bool) {
        if ticket.is_none() && queues::idle() {
            return;
        }
        queues::mark(self.key(), owner, (token, ticket), alone);
    }

    /// These owners' grants are committed (FENCE), or their entries are gone: no mark
    /// describes them any more.
    pub fn forget<'o>(&self, owners: impl IntoIterator<Item = &'o [u8]>) {
        if !queues::idle() {
            queues::unmark(self.key(), owners);
        }
    }

    /// Parks the calling client in the key's queue for up to `timeout_ms` (0: no limit); it is
    /// answered later. `holder_deadline_ms`: when the current holder's lease ends, if held.
    pub fn park(
        &self,
        wait: &Wait<'_>,
        timeout_ms: u64,
        holder_deadline_ms: Option<u64>,
    ) -> Result<RedisValue, RedisError> {
        let (ctx, key) = (self.ctx, self.key());
        let limit = config::max_waiters();
        let full = queues::peek(key, |s| {
            s.is_some_and(|s| s.queue.len() >= limit && !s.queue.contains_owner(wait.owner))
        });
        if full {
            return Err(errors::too_many_waiters(limit));
        }
        let parked = blocked::park(ctx, timeout_ms).ok_or_else(errors::cannot_block)?;
        if let Some(old) = queues::enqueue(key, wait, parked) {
            old.handle.answer(Outcome::Withdrawn);
        }
        match holder_deadline_ms {
            Some(deadline_ms) => handoff::watch(ctx, key, deadline_ms),
            // Free, yet someone is ahead: a handoff is due (held up by a pause or a quarantine).
            None => handoff::schedule(ctx, key, Duration::ZERO),
        }
        Ok(RedisValue::NoReply)
    }

    /// A write moved a lease's end to `deadline_ms`: if it ends sooner than the key's timer was
    /// set for, the timer follows, so the waiters are served when it really ends.
    pub fn lease_ends(&self, deadline_ms: u64) {
        if !queues::idle() {
            handoff::watch_sooner(self.ctx, self.key(), deadline_ms);
        }
    }

    /// A place was just freed by this command: the waiters it can serve get it now.
    pub fn freed(&self) {
        if queues::idle() {
            return;
        }
        let key = self.key();
        if queues::peek(key, |k| k.is_some()) {
            handoff::hand_off(self.ctx, key, self.name);
        }
    }

    /// The whole resource was removed by this command (FORCERELEASE): no mark describes
    /// anything, and the waiters it can serve get it now.
    pub fn cleared(&self) {
        if !queues::idle() {
            queues::clear_marks(self.key());
            self.freed();
        }
    }

    /// RELEASE by `owner` also withdraws its queued wait on the key (how a client cancels).
    pub fn withdraw(&self, owner: &[u8]) -> bool {
        if queues::idle() {
            return false;
        }
        let gone = queues::withdraw(self.key(), owner);
        let withdrew = gone.is_some();
        if let Some(waiter) = gone {
            waiter.handle.answer(Outcome::Withdrawn);
        }
        withdrew
    }

    /// Waiters queued on the key.
    pub fn count(&self) -> usize {
        if queues::idle() {
            return 0;
        }
        queues::waiting(self.key())
    }

    /// `DLOCK.WAITERS`: owner, ticket (or nil) and ms waited, in service order.
    pub fn list(&self) -> Vec<RedisValue> {
        list(self.key())
    }
}

fn list(key: &QueueKey) -> Vec<RedisValue> {
    queues::peek(key, |state| {
        let Some(state) = state else {
            return Vec::new();
        };
        state
            .queue
            .iter()
            .map(|w| {
                let ticket = if w.ticketed {
                    RedisValue::Integer(i64::try_from(w.rank).unwrap_or(i64::MAX))
                } else {
                    RedisValue::Null
                };
                let waited = w.handle.since.elapsed().as_millis();
                RedisValue::Array(vec![
                    RedisValue::StringBuffer(w.owner.clone()),
                    ticket,
                    RedisValue::Integer(i64::try_from(waited).unwrap_or(i64::MAX)),
                    RedisValue::SimpleStringStatic(want_word(w.want)),
                ])
            })
            .collect()
    })
}

/// How `DLOCK.WAITERS` and `DLOCK.STATUS` name what a waiter or a holder has or wants.
pub fn want_word(want: Want) -> &'static str {
    mode_word(want.mode())
}

pub fn mode_word(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "exclusive",
        Mode::Shared => "shared",
        Mode::Permit => "permit",
    }
}

/// A key with waiters, as `DLOCK.TOP` lists it.
pub struct Queued {
    pub key: Vec<u8>,
    pub waiters: usize,
    /// How long the longest-waiting client has waited.
    pub oldest_ms: u64,
}

/// The keys of database `db` with waiters, longest queue first, then oldest waiter first; at
/// most `limit`. Costs a pass over the keys with waiting state and a sort of them.
pub fn busiest(db: i32, limit: usize) -> Vec<Queued> {
    if queues::idle() {
        return Vec::new();
    }
    let mut queued: Vec<Queued> = queues::queued_in(db)
        .into_iter()
        .map(|(key, waiters, oldest)| Queued {
            key,
            waiters,
            oldest_ms: u64::try_from(oldest.as_millis()).unwrap_or(u64::MAX),
        })
        .collect();
    queued.sort_unstable_by(|a, b| {
        (b.waiters, b.oldest_ms, &a.key).cmp(&(a.waiters, a.oldest_ms, &b.key))
    });
    queued.truncate(limit);
    queued
}
