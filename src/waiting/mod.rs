//! Fair waiting inside the server (docs/protocol.md §5): `DLOCK.ACQUIRE ... WAIT` parks the
//! client in a per-key queue in module memory, and the moment the lock is free the first waiter
//! in service order gets it. The rules (order, tentative grants, wounds) are
//! `dlock_core::wait`'s; this module keeps the queues and the parked clients, and decides when
//! to hand off.

mod blocked;
mod cluster;
mod events;
mod handoff;
mod migration;
mod parked;
mod queues;

use std::cell::OnceCell;
use std::time::Duration;

use dlock_core::group::{self, Entry, Kind, Want};
use dlock_core::wait::{self, Decision, Queue, Request, Tentative};
use dlock_core::Held;
use redis_module::{raw, Context, RedisError, RedisValue};

pub use events::watch;
pub use queues::{waiters, QueueKey, Wait};

use crate::keyspace::key::selected_db;
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

    /// What an ACQUIRE does here, given the key's queue and tentative mark.
    pub fn decide(&self, held: Option<Held<'_>>, req: &Request<'_>) -> Decision {
        if queues::idle() {
            return wait::acquire(held, None, &Queue::<()>::default(), req);
        }
        queues::peek(self.key(), |state| match state {
            Some(s) => wait::acquire(held, s.tentative.as_ref(), &s.queue, req),
            None => wait::acquire(held, None, &Queue::<()>::default(), req),
        })
    }

    /// What an ACQUIRE of a shared lock or a semaphore does here, given the live holders, the
    /// queue and the holders' tentative marks.
    pub fn decide_group(
        &self,
        holders: (Option<Kind>, &[Entry<'_>]),
        req: &Request<'_>,
        want: Want,
    ) -> group::Decision {
        let empty = Queue::<()>::default();
        if queues::idle() {
            return group::decide(holders, &empty, req, want, |_| None);
        }
        queues::peek(self.key(), |state| match state {
            Some(s) => group::decide(holders, &s.queue, req, want, |e| ticket_in(s, e)),
            None => group::decide(holders, &empty, req, want, |_| None),
        })
    }

    /// A ticketed grant to a holder stays tentative until its FENCE commits it.
    pub fn granted_holder(&self, owner: &[u8], token: u64, ticket: Option<u64>) {
        if ticket.is_some() {
            queues::mark_holder(self.key(), owner, token, ticket);
        }
    }

    /// The holder's FENCE committed its grant: it can no longer be wounded (whether its mark is
    /// a holder's or, for an exclusive grant, the lock's).
    pub fn committed_holder(&self, owner: &[u8]) {
        if !queues::idle() {
            queues::unmark_where(self.key(), |m| m.owner == owner);
            queues::update(self.key(), |k| {
                if k.tentative.as_ref().is_some_and(|t| t.owner == owner) {
                    k.tentative = None;
                }
            });
        }
    }

    /// A ticketed grant stays tentative until FENCE commits it; a fresh grant ends any mark.
    pub fn granted(&self, owner: &[u8], token: u64, ticket: Option<u64>) {
        if ticket.is_none() && queues::idle() {
            return;
        }
        queues::mark_grant(self.key(), owner, token, ticket);
    }

    /// FENCE committed the grant: it can no longer be wounded.
    pub fn committed(&self) {
        if !queues::idle() {
            queues::update(self.key(), |k| k.tentative = None);
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

    /// The lock was just freed by this command: the next waiter gets it now.
    pub fn freed(&self) {
        if queues::idle() {
            return;
        }
        let key = self.key();
        if queues::update(key, |k| k.tentative = None).is_some() {
            handoff::hand_off(self.ctx, key, self.name);
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
        count(self.key())
    }

    /// `DLOCK.WAITERS`: owner, ticket (or nil) and ms waited, in service order.
    pub fn list(&self) -> Vec<RedisValue> {
        list(self.key())
    }
}

/// The ticket of `entry`'s uncommitted grant, if it is one: a shared or permit holder's mark,
/// or the lock's own mark when the entry is its exclusive holder.
fn ticket_in(state: &queues::KeyState, entry: &Entry<'_>) -> Option<u64> {
    let describes = |m: &&Tentative| m.owner == entry.owner && m.token == entry.token;
    let holder_mark = state.marks.iter().find(describes);
    holder_mark
        .or_else(|| state.tentative.as_ref().filter(describes))
        .map(|m| m.ticket)
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

pub fn mode_word(mode: group::Mode) -> &'static str {
    match mode {
        group::Mode::Exclusive => "exclusive",
        group::Mode::Shared => "shared",
        group::Mode::Permit => "permit",
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

/// Waiters queued on one key.
fn count(key: &QueueKey) -> usize {
    queues::peek(key, |s| s.map_or(0, |s| s.queue.len()))
}
