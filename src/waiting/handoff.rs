//! Handing a lock that became free to the first waiter: a fresh grant, replicated like any
//! other, and one parked client answered. Runs inside the command that freed the lock (RELEASE,
//! FORCERELEASE), or from a timer: at the holder's deadline (so a lock with waiters passes on
//! when its TTL ends, not when Redis's lazy or background expiry gets to it), right after a
//! DEL / UNLINK / FLUSHALL (a keyspace notification must not write), and when a quarantine or
//! a write pause ends.

use std::time::{Duration, Instant};

use redis_module::{raw, Context, RedisString};

use dlock_core::queue::Waiter;
use dlock_core::rules::{self, Serve};
use dlock_core::Want;

use super::parked::{Outcome, Parked};
use super::queues::{self, QueueKey};
use super::sets::Served;
use crate::keyspace::LockKey;
use crate::server;
use crate::stats::{self, HANDOFFS};
use crate::wire::{errors, Arg};
use crate::writes::{self, Grant, Owner, Refusal};

/// How soon a handoff held up by a write pause tries again.
const PAUSED_RETRY: Duration = Duration::from_millis(5);

/// How long one handoff may hold the event loop: past it, the rest of the queue is served from
/// a timer on the next turn, so that leases of thousands of permits ending together with as
/// many waiters never stall the server (clients are answered, and other commands run, between
/// the turns). A request arriving meanwhile still queues behind them: nobody is overtaken.
const TURN: Duration = Duration::from_micros(250);

/// Serves the waiters of the resource under `name` in service order while the head can be
/// granted (a free lock to one writer; consecutive readers together; a semaphore's free places
/// in order), then watches the next lease to end while others still wait.
pub fn hand_off(ctx: &Context, queue: &QueueKey, name: &Arg) {
    let started = Instant::now();
    loop {
        if started.elapsed() > TURN {
            return schedule(ctx, queue, Duration::ZERO);
        }
        let mut key = LockKey::open(ctx, name, true);
        let now_us = server::now_us();
        let Ok(view) = key.view(now_us / 1000) else {
            return fail_all(queue, "ERR the key no longer holds a lock");
        };
        let Some(queues::Head {
            owner, want, id, ..
        }) = queues::head(queue)
        else {
            return;
        };
        if queues::parked_keys(id).len() > 1 {
            let next = view.next_deadline();
            drop(key);
            match super::sets::serve(ctx, id) {
                Served::Done => continue,
                Served::Wait => return next.into_iter().for_each(|d| watch(ctx, queue, d)),
                Served::Retry(after) => return schedule(ctx, queue, after),
            }
        }
        match rules::serve_head(&view, &owner, want) {
            Serve::Wait => {
                let next = view.next_deadline();
                drop(key);
                if let Some(deadline_ms) = next {
                    watch(ctx, queue, deadline_ms);
                }
                return;
            }
            Serve::WrongKind { is } => {
                let failed = queues::pop(queue);
                let error = errors::wrong_kind(is, want).to_string();
                if let Some(waiter) = failed {
                    waiter.handle.answer(Outcome::Failed(error));
                }
            }
            Serve::Grant { downgrade } => {
                if let Err(redirect) = super::cluster::may_grant_here(ctx, queue, name.as_bytes()) {
                    return fail_all(queue, &redirect);
                }
                let Some(next) = queues::pop(queue) else {
                    return;
                };
                let granted = grant(ctx, &mut key, &next, (downgrade, now_us));
                if let Some(retry) = answer(queue, next, granted) {
                    return schedule(ctx, queue, retry);
                }
            }
        }
    }
}

/// A served waiter's grant: a fresh entry, or (an exclusive holder asking for the shared side)
/// a downgrade keeping its token.
fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    next: &Waiter<Parked>,
    (downgrade, now_us): (Option<u64>, u64),
) -> Result<Grant, Refusal> {
    let owner = Owner {
        bytes: &next.owner,
        arg: None,
    };
    match downgrade {
        None => writes::grant(ctx, key, (owner, next.want), next.ttl_ms, now_us),
        Some(token) => {
            let deadline_ms = dlock_core::node::deadline_at(now_us / 1000, next.ttl_ms);
            writes::downgrade(ctx, key, &next.owner, (token, deadline_ms), now_us / 1000)
                .map(|gone| Grant { token, gone })
                .map_err(Refusal::Error)
        }
    }
}

/// Answers a served waiter; `Some(delay)` when the grant must wait (the quarantine) and the
/// waiter went back to the head of the queue.
fn answer(
    queue: &QueueKey,
    next: Waiter<Parked>,
    granted: Result<Grant, Refusal>,
) -> Option<Duration> {
    match granted {
        Ok(grant) => {
            let ticket = next.ticketed.then_some(next.rank);
            let alone = next.want == Want::Exclusive;
            queues::unmark(queue, grant.gone.iter().map(|s| &*s.owner));
            queues::mark(queue, &next.owner, (grant.token, ticket), alone);
            stats::count(&HANDOFFS);
            next.handle.answer(Outcome::Granted(grant.token));
            None
        }
        Err(Refusal::Quarantined { ms_left }) => {
            queues::requeue(queue, next);
            Some(Duration::from_millis(ms_left.saturating_add(1)))
        }
        Err(Refusal::Error(error)) => {
            next.handle.answer(Outcome::Failed(error.to_string()));
            None
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

/// A holder's lease now ends at `deadline_ms` (an EXTEND or a FENCE shortened it): the key's
/// timer moves up if it was due later, so waiters are served when the lease really ends.
pub fn watch_sooner(ctx: &Context, key: &QueueKey, deadline_ms: u64) {
    let later = queues::peek(key, |k| {
        k.is_some_and(|k| {
            !k.queue.is_empty() && (k.timer.is_none() || k.timer_due_ms > deadline_ms)
        })
    });
    if later {
        watch(ctx, key, deadline_ms);
    }
}

/// Runs a handoff of `key` after `after` (replacing the key's pending timer).
pub fn schedule(ctx: &Context, key: &QueueKey, after: Duration) {
    cancel_timer(ctx, key);
    let id = ctx.create_timer(after, on_timer, key.clone());
    let due_ms = server::now_ms().saturating_add(after.as_millis() as u64);
    queues::with_key(key, |k| {
        k.timer = Some(id);
        k.timer_due_ms = due_ms;
    });
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
