//! The lock writes shared by the commands and the waiting queues: a fresh grant and a rewrite
//! of the lock in place. Each stores the lock, replicates its effect and tells watchers.

use std::ffi::CStr;

use dlock_core::node::deadline_at;
use std::os::raw::c_int;

use dlock_core::group::{Mode, Want};
use dlock_core::GrantRefused;
use redis_module::{Context, RedisError};

use crate::keyspace::group::{Group, Holder};
use crate::keyspace::notify;
use crate::keyspace::value::Record;
use crate::keyspace::LockKey;
use crate::node::node;
use crate::replication::effects;
use crate::stats::{self, EVICTION_REFUSALS, GRANTS};
use crate::wire::{errors, Arg};
use crate::{config, server};

/// A grant made: its token.
pub struct Grant {
    pub token: u64,
}

/// Why a grant was not made.
pub enum Refusal {
    /// The restart quarantine: grants resume in `ms_left`.
    Quarantined {
        ms_left: u64,
    },
    Error(RedisError),
}

impl From<Refusal> for RedisError {
    fn from(refusal: Refusal) -> RedisError {
        match refusal {
            Refusal::Quarantined { ms_left } => errors::quarantined(ms_left),
            Refusal::Error(error) => error,
        }
    }
}

/// A fresh grant of a free lock, dated `now_us` (the wall clock the caller read the lock at):
/// refused while the eviction policy could drop it, during the restart quarantine, and once the
/// counter is exhausted. `owner_arg` is the command's owner argument, if it has one.
pub fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    owner: &[u8],
    owner_arg: Option<&Arg>,
    ttl_ms: u64,
    now_us: u64,
) -> Result<Grant, Refusal> {
    let flags = server::context_flags(ctx.ctx);
    let token = issue_token(ctx, flags, now_us)?;
    let deadline_ms = deadline_at(now_us / 1000, ttl_ms);
    key.put(owner, token, 1, deadline_ms)
        .map_err(Refusal::Error)?;
    let record = Record {
        owner,
        token,
        holds: 1,
        deadline_ms,
        place: key.place(),
    };
    effects::apply_flagged(ctx, flags, key.name(), owner_arg, &record);
    key.changed(notify::ACQUIRE);
    stats::count(&GRANTS);
    Ok(Grant { token })
}

/// A fresh token for a grant dated `now_us`: refused while the eviction policy could drop the
/// lock, during the restart quarantine, and once the counter is exhausted.
fn issue_token(ctx: &Context, flags: c_int, now_us: u64) -> Result<u64, Refusal> {
    if server::may_evict(flags) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        let policy = server::eviction_policy(ctx);
        return Err(Refusal::Error(errors::eviction(&policy)));
    }
    node()
        .grant_at(&config::settings(), now_us)
        .map_err(|refused| match refused {
            GrantRefused::Quarantined { ms_left } => Refusal::Quarantined { ms_left },
            GrantRefused::Exhausted => Refusal::Error(errors::exhausted()),
        })
}

/// A fresh grant of a place in a shared lock or a semaphore (`want`) to `owner`, into the
/// resource whose stored state is `before` (ended leases are dropped on the way).
pub fn grant_holder(
    ctx: &Context,
    key: &mut LockKey<'_>,
    before: &Group,
    (owner, want): (&[u8], Want),
    ttl_ms: u64,
    now_us: u64,
) -> Result<Grant, Refusal> {
    let token = issue_token(ctx, server::context_flags(ctx.ctx), now_us)?;
    let deadline_ms = deadline_at(now_us / 1000, ttl_ms);
    let mut after = before.clone();
    after.prune(now_us / 1000);
    after.limit = match want {
        Want::Permit { limit } => limit,
        Want::Exclusive | Want::Shared => 0,
    };
    after.upsert(Holder {
        owner: owner.into(),
        mode: want.mode(),
        token,
        holds: 1,
        deadline_ms,
    });
    store_group(ctx, key, before, after, notify::ACQUIRE).map_err(Refusal::Error)?;
    stats::count(&GRANTS);
    Ok(Grant { token })
}

/// Changes the holders of the resource whose stored state is `before`: ended leases are dropped,
/// then `change` applies; the result is stored and replicated.
pub fn change_holders(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (before, now_ms): (&Group, u64),
    event: &CStr,
    change: impl FnOnce(&mut Group),
) -> Result<(), RedisError> {
    let mut after = before.clone();
    after.prune(now_ms);
    change(&mut after);
    store_group(ctx, key, before, after, event)
}

/// An exclusive holder takes the shared side too: a shared entry with its token.
pub fn downgrade(
    ctx: &Context,
    key: &mut LockKey<'_>,
    before: &Group,
    owner: &[u8],
    (token, deadline_ms): (u64, u64),
    now_ms: u64,
) -> Result<(), RedisError> {
    let shared = Holder {
        owner: owner.into(),
        mode: Mode::Shared,
        token,
        holds: 1,
        deadline_ms,
    };
    change_holders(ctx, key, (before, now_ms), notify::ACQUIRE, |g| {
        g.upsert(shared)
    })
}

/// Stores `after` as the resource's new state (from `before`, as stored) and replicates what
/// changed, holder by holder: removals first (with hold count 0), then every holder added or
/// changed; or one `DEL` when nobody is left.
pub fn store_group(
    ctx: &Context,
    key: &mut LockKey<'_>,
    before: &Group,
    after: Group,
    event: &CStr,
) -> Result<(), RedisError> {
    let same = |a: &Holder, b: &Holder| a.owner == b.owner && a.mode == b.mode;
    let removed: Vec<Holder> = before
        .holders
        .iter()
        .filter(|b| !after.holders.iter().any(|a| same(a, b)))
        .cloned()
        .collect();
    let changed: Vec<Holder> = after
        .holders
        .iter()
        .filter(|a| !before.holders.iter().any(|b| b == *a))
        .cloned()
        .collect();
    let (limits, empty) = ((before.limit, after.limit), after.holders.is_empty());
    key.store_group(after)?;
    if empty {
        effects::delete(ctx, key.name());
    } else {
        for holder in &removed {
            effects::apply_holder(ctx, key.name(), holder, 0, limits.0);
        }
        for holder in &changed {
            effects::apply_holder(ctx, key.name(), holder, holder.holds, limits.1);
        }
    }
    key.changed(event);
    Ok(())
}

/// Stores new holds, token and deadline in the lock already under `key`, and replicates it.
/// `owner_arg` is the command's owner argument.
pub fn rewrite(
    ctx: &Context,
    key: &mut LockKey<'_>,
    record: &Record<'_>,
    owner_arg: &Arg,
    event: &CStr,
) {
    if let Some(mut value) = key.value_mut() {
        value.set_token(record.token);
        value.set_holds(record.holds);
    }
    key.set_deadline(record.deadline_ms);
    effects::apply(ctx, key.name(), Some(owner_arg), record);
    key.changed(event);
}

/// Deletes the lock under `key` and replicates the deletion.
pub fn remove(ctx: &Context, key: &mut LockKey<'_>, event: &CStr) {
    key.delete();
    effects::delete(ctx, key.name());
    key.changed(event);
}
