//! Set requests in the wait queues (dlock_core::sets; docs/multi.md): a set parks one client in
//! the queue of every member at one node-wide arrival number, holding nothing; a handoff whose
//! head is a set grants it only when it heads every member's queue and every member is free,
//! with one token. The tentative sets (ticketed, not committed yet) are remembered here, so a
//! wound of one member revokes the whole set.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use dlock_core::rules::{self, Serve};
use dlock_core::sets::{self, SetServe};
use dlock_core::{Holders, Mode, Want};
use redis_module::{Context, RedisError, RedisString, RedisValue};

use super::parked::Outcome;
use super::queues::{self, QueueKey, Wait};
use super::{blocked, handoff, Waiters};
use crate::keyspace::{notify, LockKey};
use crate::stats::{self, HANDOFFS, REVOCATIONS};
use crate::wire::{errors, Arg};
use crate::writes::{self, Owner, Refusal};
use crate::{config, server};

/// A tentative set: its token and its members.
struct Tentative {
    token: u64,
    keys: Vec<QueueKey>,
}

thread_local! {
    /// Owner -> its tentative set on this node (an owner is one acquisition: one set at most).
    static TENTATIVE: RefCell<HashMap<Vec<u8>, Tentative>> = RefCell::new(HashMap::new());
}

/// Past this many remembered sets, the ones no member marks any more are dropped (a set whose
/// lease ended uncommitted leaves nothing else behind).
const SWEEP_AT: usize = 1024;

/// A set of several keys granted for a ticket: tentative until FENCEALL commits it.
pub fn granted_tentative(owner: &[u8], token: u64, keys: Vec<QueueKey>) {
    if keys.len() < 2 {
        return;
    }
    TENTATIVE.with_borrow_mut(|sets| {
        if sets.len() >= SWEEP_AT {
            sets.retain(|owner, set| {
                let marked = |k: &QueueKey| queues::is_tentative(k, owner, set.token);
                set.keys.iter().any(marked)
            });
        }
        sets.insert(owner.to_vec(), Tentative { token, keys });
    });
}

/// The owner's set was committed or released: no wound can reach it any more.
pub fn settled(owner: &[u8]) {
    TENTATIVE.with_borrow_mut(|sets| sets.remove(owner));
}

/// A wound on `key` revoked `owner`'s entry there: if that entry belonged to a tentative set,
/// the set's other members go too (a set is one hold). Runs inside the wounding command.
pub fn wound_rest(ctx: &Context, owner: &[u8], key: &QueueKey) -> Result<(), RedisError> {
    let set = TENTATIVE.with_borrow_mut(|sets| {
        let hit = sets.get(owner).is_some_and(|s| s.keys.contains(key));
        hit.then(|| sets.remove(owner)).flatten()
    });
    let Some(set) = set else {
        return Ok(());
    };
    for other in set.keys.iter().filter(|k| *k != key) {
        let name = RedisString::create_from_slice(ctx.ctx, &other.1);
        let arg = Arg::new(name.inner);
        revoke(ctx, &arg, owner, set.token)?;
    }
    Ok(())
}

/// Removes `owner`'s entries holding `token` from the key `name`, and serves its waiters.
fn revoke(ctx: &Context, name: &Arg, owner: &[u8], token: u64) -> Result<(), RedisError> {
    let mut key = LockKey::open(ctx, name, true);
    let now_ms = server::now_ms();
    let view = key.view(now_ms)?;
    let entries: Vec<Mode> = view
        .mine(owner)
        .iter()
        .filter(|h| h.token == token)
        .map(|h| h.mode)
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    let removed: Vec<(&[u8], Mode)> = entries.iter().map(|&m| (owner, m)).collect();
    let gone = writes::remove(ctx, &mut key, &removed, (notify::REVOKE, now_ms))?;
    drop(key);
    let waiters = Waiters::of(ctx, name);
    waiters.forget(std::iter::once(owner).chain(gone.iter().map(|s| &*s.owner)));
    stats::count_n(&REVOCATIONS, entries.len());
    // Served from a timer, after the wounding command: it still has to grant its own request,
    // and a handoff now could hand one of its keys to someone else first.
    let queue = (server::selected_db(ctx), name.as_bytes().to_vec());
    if queues::waiting(&queue) > 0 {
        handoff::schedule(ctx, &queue, Duration::ZERO);
    }
    Ok(())
}

/// One member of a set request about to wait: its key, what it wants, and when its current
/// holder's lease ends (if held).
pub struct Member {
    pub key: QueueKey,
    pub want: Want,
    pub deadline_ms: Option<u64>,
}

/// Parks the calling client in every member's queue for up to `timeout_ms` (0: no limit).
pub fn park(
    ctx: &Context,
    members: &[Member],
    wait: &Wait<'_>,
    timeout_ms: u64,
) -> Result<RedisValue, RedisError> {
    let limit = config::max_waiters();
    let full = members.iter().any(|m| {
        queues::peek(&m.key, |s| {
            s.is_some_and(|s| s.queue.len() >= limit && !s.queue.contains_owner(wait.owner))
        })
    });
    if full {
        return Err(errors::too_many_waiters(limit));
    }
    let parked = blocked::park(ctx, timeout_ms).ok_or_else(errors::cannot_block)?;
    let keys: Vec<(QueueKey, Want)> = members.iter().map(|m| (m.key.clone(), m.want)).collect();
    for old in queues::enqueue_set(&keys, wait, parked) {
        old.handle.answer(Outcome::Withdrawn);
    }
    for m in members {
        match m.deadline_ms {
            Some(deadline_ms) => handoff::watch(ctx, &m.key, deadline_ms),
            None => handoff::schedule(ctx, &m.key, Duration::ZERO),
        }
    }
    Ok(RedisValue::NoReply)
}

/// What a handoff's look at a waiting set came to.
pub enum Served {
    /// Granted, or answered with an error: the queue moves on.
    Done,
    /// Not yet: it keeps its places.
    Wait,
    /// The quarantine holds grants back: try again after this.
    Retry(Duration),
}

/// The parked set `id` heads the queue of a key that may have freed: grant it if it heads every
/// member's queue and every member can be granted now.
pub fn serve(ctx: &Context, id: usize) -> Served {
    let keys = queues::parked_keys(id);
    let names: Vec<RedisString> = keys
        .iter()
        .map(|k| RedisString::create_from_slice(ctx.ctx, &k.1))
        .collect();
    let args: Vec<Arg> = names.iter().map(|n| Arg::new(n.inner)).collect();
    let now_us = server::now_us();
    let mut members = Vec::with_capacity(keys.len());
    let mut heads = Vec::with_capacity(keys.len());
    for (key, name) in keys.iter().zip(&args) {
        let head = queues::head(key).filter(|h| h.id == id);
        members.push(head.as_ref().map(|h| serve_member(ctx, name, h, now_us)));
        heads.push(head);
    }
    let statuses: Vec<Option<Serve>> = members.iter().map(|m| m.clone()?.ok()).collect();
    if let Some(Some(Err(message))) = members.into_iter().find(|m| matches!(m, Some(Err(_)))) {
        return fail(id, message);
    }
    match sets::serve_set(&statuses) {
        SetServe::Wait => Served::Wait,
        SetServe::Fail { member, why } => fail(id, refusal(why, &heads[member], &keys[member])),
        SetServe::Grant => grant(ctx, id, (&keys, &args), &heads, now_us),
    }
}

/// What serving the set's member `name` alone would do now; `Err` when the key cannot be read.
fn serve_member(
    ctx: &Context,
    name: &Arg,
    head: &queues::Head,
    now_us: u64,
) -> Result<Serve, String> {
    let key = LockKey::open(ctx, name, false);
    let view = key.view(now_us / 1000).map_err(|e| e.to_string())?;
    Ok(rules::serve_head(&view, &head.owner, head.want))
}

fn refusal(why: Serve, head: &Option<queues::Head>, key: &QueueKey) -> String {
    match (why, head) {
        (Serve::WrongKind { is }, Some(h)) => errors::wrong_kind(is, h.want).to_string(),
        _ => errors::set_overlaps(&key.1).to_string(),
    }
}

fn fail(id: usize, message: String) -> Served {
    if let Some(waiter) = queues::take(id) {
        waiter.handle.answer(Outcome::Failed(message));
    }
    Served::Done
}

/// Grants every member at once with one token, answers the set, and lets the other members'
/// queues move on.
fn grant(
    ctx: &Context,
    id: usize,
    (keys, names): (&[QueueKey], &[Arg]),
    heads: &[Option<queues::Head>],
    now_us: u64,
) -> Served {
    let Some(Some(first)) = heads.first() else {
        return Served::Wait;
    };
    if let Err(redirect) = super::cluster::may_grant_here(ctx, &keys[0], &keys[0].1) {
        return fail(id, redirect);
    }
    let mut locks: Vec<(LockKey<'_>, Want)> = names
        .iter()
        .zip(heads)
        .map(|(name, h)| {
            (
                LockKey::open(ctx, name, true),
                h.as_ref().map_or(Want::Exclusive, |h| h.want),
            )
        })
        .collect();
    let owner = Owner {
        bytes: &first.owner,
        arg: None,
    };
    let granted = writes::grant_set(ctx, &mut locks, owner, first.ttl_ms, now_us);
    drop(locks);
    let (token, gone) = match granted {
        Ok(granted) => granted,
        Err(Refusal::Quarantined { ms_left }) => {
            return Served::Retry(Duration::from_millis(ms_left.saturating_add(1)))
        }
        Err(Refusal::Error(error)) => return fail(id, error.to_string()),
    };
    let Some(waiter) = queues::take(id) else {
        return Served::Done;
    };
    for ((key, gone), h) in keys.iter().zip(&gone).zip(heads) {
        let alone = h.as_ref().is_some_and(|h| h.want == Want::Exclusive);
        queues::unmark(key, gone.iter().map(|s| &*s.owner));
        queues::mark(key, &first.owner, (token, first.ticket), alone);
        handoff::schedule(ctx, key, Duration::ZERO); // a shared member may admit more
    }
    if first.ticket.is_some() {
        granted_tentative(&first.owner, token, keys.to_vec());
    }
    stats::count(&HANDOFFS);
    waiter.handle.answer(Outcome::Granted(token));
    Served::Done
}
