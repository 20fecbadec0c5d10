//! Handing a lock that became free to the first waiter: a fresh grant, replicated like any
//! other, and one parked client answered. Runs inside the command that freed the lock (RELEASE,
//! FORCERELEASE), or from a timer: at the holder's deadline (so a lock with waiters passes on
//! when its TTL ends, not when Redis's lazy or background expiry gets to it), right after a
//! DEL / UNLINK / FLUSHALL (a keyspace notification must not write), and when a quarantine or
//! a write pause ends.

use std::time::Duration;

use redis_module::{raw, Context, RedisString};

use super::parked::Outcome;
use super::queues::{self, QueueKey};
use crate::keyspace::LockKey;
use crate::server;
use crate::stats::{self, HANDOFFS};
use crate::wire::Arg;
use crate::writes::{self, Refusal};

/// How soon a handoff held up by a write pause tries again.
const PAUSED_RETRY: Duration = Duration::from_millis(5);

/// Grants the lock under `name` to waiters in service order until one holds it, then watches
/// the holder's deadline while others still wait.
pub fn hand_off(ctx: &Context, queue: &QueueKey, name: &Arg) {
    loop {
        let mut lock = LockKey::open(ctx, name, true);
        let now_us = server::now_us();
        let deadline_ms = match lock.held(now_us / 1000) {
            Ok(Some(held)) => Some(held.deadline_ms),
            Ok(None) => None,
            Err(_) => return fail_all(queue, "ERR the key no longer holds a lock"),
        };
        if let Some(deadline_ms) = deadline_ms {
            drop(lock);
            return watch(ctx, queue, deadline_ms);
        }
        if let Err(redirect) = super::cluster::may_grant_here(ctx, queue, name.as_bytes()) {
            return fail_all(queue, &redirect);
        }
        let Some(next) = queues::pop(queue) else {
            return;
        };
        match writes::grant(ctx, &mut lock, &next.owner, None, next.ttl_ms, now_us) {
            Ok(grant) => {
                let ticket = next.ticketed.then_some(next.rank);
                queues::mark_grant(queue, &next.owner, grant.token, ticket);
                stats::count(&HANDOFFS);
                next.handle.answer(Outcome::Granted(grant.token));
                drop(lock);
                return watch(ctx, queue, grant.deadline_ms);
            }
            Err(Refusal::Quarantined { ms_left }) => {
                queues::requeue(queue, next);
                return schedule(ctx, queue, Duration::from_millis(ms_left.saturating_add(1)));
            }
            Err(Refusal::Error(error)) => {
                next.handle.answer(Outcome::Failed(error.to_string()));
            }
        }
    }
}

/// Keeps one timer on a key with waiters, firing at the holder's deadline.
pub fn watch(ctx: &Context, key: &QueueKey, deadline_ms: u64) {
    let waiting = queues::peek(key, |k| k.is_some_and(|k| !k.queue.is_empty()));
    if !waiting {
        return cancel_timer(ctx, key);
    }
    let wait_ms = deadline_ms.saturating_sub(server::now_ms());
    schedule(ctx, key, Duration::from_millis(wait_ms.saturating_add(1)));
}

/// Runs a handoff of `key` after `after` (replacing the key's pending timer).
pub fn schedule(ctx: &Context, key: &QueueKey, after: Duration) {
    cancel_timer(ctx, key);
    let id = ctx.create_timer(after, on_timer, key.clone());
    queues::with_key(key, |k| k.timer = Some(id));
}

fn cancel_timer(ctx: &Context, key: &QueueKey) {
    if let Some(id) = queues::update(key, |k| k.timer.take()).flatten() {
        let _ = ctx.stop_timer::<QueueKey>(id);
    }
}

fn on_timer(ctx: &Context, key: QueueKey) {
    queues::update(&key, |k| k.timer = None);
    if server::writes_paused() {
        return schedule(ctx, &key, PAUSED_RETRY);
    }
    if server::is_replica(ctx) {
        return;
    }
    let Some(select) = crate::api!(RedisModule_SelectDb) else {
        return;
    };
    // SAFETY: the timer's own context; the database index was valid when the key was queued
    // (SelectDb refuses an index out of range, and then nothing is granted).
    if unsafe { select(ctx.ctx, key.0) } != raw::REDISMODULE_OK as i32 {
        return fail_all(&key, "ERR the database is gone");
    }
    let name = RedisString::create_from_slice(ctx.ctx, &key.1); // binary-safe
    hand_off(ctx, &key, &Arg::new(name.inner));
}

/// Answers every waiter of the key with an error (the key cannot be granted any more).
fn fail_all(key: &QueueKey, message: &str) {
    while let Some(waiter) = queues::pop(key) {
        waiter.handle.answer(Outcome::Failed(message.to_string()));
    }
}
