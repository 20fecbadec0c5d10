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
mod queues;

use std::time::Duration;

use dlock_core::wait::{self, Decision, Queue, Request, Tentative};
use dlock_core::Held;
use redis_module::{raw, Context, RedisError, RedisValue};

pub use blocked::Outcome;
pub use events::watch;
pub use queues::{waiters, Place};

use crate::keyspace::key::selected_db;
use crate::wire::{errors, Arg};
use crate::{config, server};

/// The key of a command, as the queues name it.
pub fn place(ctx: &Context, name: &Arg) -> Place {
    (selected_db(ctx), name.as_bytes().to_vec())
}

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

/// What an ACQUIRE of `name` does here, given the key's queue and tentative mark.
pub fn decide(ctx: &Context, name: &Arg, held: Option<Held<'_>>, req: &Request<'_>) -> Decision {
    if queues::idle() {
        return wait::acquire(held, None, &Queue::<()>::default(), req);
    }
    queues::peek(&place(ctx, name), |state| match state {
        Some(s) => wait::acquire(held, s.tentative.as_ref(), &s.queue, req),
        None => wait::acquire(held, None, &Queue::<()>::default(), req),
    })
}

/// A ticketed grant stays tentative until FENCE commits it; a fresh grant ends any mark.
pub fn granted(ctx: &Context, name: &Arg, owner: &[u8], token: u64, ticket: Option<u64>) {
    let Some(ticket) = ticket else {
        if !queues::idle() {
            queues::update(&place(ctx, name), |k| k.tentative = None);
        }
        return;
    };
    let mark = Tentative {
        owner: owner.to_vec(),
        token,
        ticket,
    };
    queues::with_key(&place(ctx, name), |k| k.tentative = Some(mark));
}

/// FENCE committed the grant: it can no longer be wounded.
pub fn committed(ctx: &Context, name: &Arg) {
    if !queues::idle() {
        queues::update(&place(ctx, name), |k| k.tentative = None);
    }
}

/// One queued ACQUIRE.
pub struct Wait<'a> {
    pub owner: &'a [u8],
    pub rank: u64,
    pub ticketed: bool,
    pub ttl_ms: u64,
    pub timeout_ms: u64,
    /// The current holder's deadline, if the lock is held.
    pub holder_deadline_ms: Option<u64>,
}

/// Parks the calling client in the key's queue; it is answered later.
pub fn park(ctx: &Context, place: &Place, wait: &Wait<'_>) -> Result<RedisValue, RedisError> {
    let limit = config::max_waiters();
    let full = queues::peek(place, |s| {
        s.is_some_and(|s| s.queue.len() >= limit && !s.queue.iter().any(|w| w.owner == wait.owner))
    });
    if full {
        return Err(errors::too_many_waiters(limit));
    }
    let parked = blocked::park(ctx, wait.timeout_ms).ok_or_else(errors::cannot_block)?;
    let replaced = queues::enqueue(
        place,
        wait.owner,
        wait.rank,
        wait.ticketed,
        wait.ttl_ms,
        parked,
    );
    if let Some(old) = replaced {
        old.handle.answer(Outcome::Withdrawn);
    }
    match wait.holder_deadline_ms {
        Some(deadline_ms) => handoff::watch(ctx, place, deadline_ms),
        // Free, yet someone is ahead: a handoff is due (held up by a pause or a quarantine).
        None => handoff::schedule(ctx, place, Duration::ZERO),
    }
    Ok(RedisValue::NoReply)
}

/// The lock under `name` was just freed by this command: the next waiter gets it now.
pub fn freed(ctx: &Context, name: &Arg) {
    if queues::idle() {
        return;
    }
    let place = place(ctx, name);
    if queues::update(&place, |k| k.tentative = None).is_some() {
        handoff::hand_off(ctx, &place, name);
    }
}

/// RELEASE by `owner` also withdraws its queued wait on the key (how a client cancels).
pub fn withdraw(ctx: &Context, name: &Arg, owner: &[u8]) -> bool {
    if queues::idle() {
        return false;
    }
    let gone = queues::withdraw(&place(ctx, name), owner);
    let withdrew = gone.is_some();
    if let Some(waiter) = gone {
        waiter.handle.answer(Outcome::Withdrawn);
    }
    withdrew
}

/// `DLOCK.WAITERS`: owner, ticket (or nil) and ms waited, in service order.
pub fn list(place: &Place) -> Vec<RedisValue> {
    queues::peek(place, |state| {
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
                ])
            })
            .collect()
    })
}

/// Waiters queued on one key.
pub fn count(place: &Place) -> usize {
    queues::peek(place, |s| s.map_or(0, |s| s.queue.len()))
}
