//! The lock writes shared by the commands and the waiting queues: a fresh grant and a rewrite
//! of the lock in place. Each stores the lock, replicates its effect and tells watchers.

use std::ffi::CStr;

use dlock_core::node::deadline_at;
use dlock_core::GrantRefused;
use redis_module::{Context, RedisError};

use crate::keyspace::notify;
use crate::keyspace::value::Record;
use crate::keyspace::LockKey;
use crate::node::node;
use crate::replication::effects;
use crate::stats::{self, EVICTION_REFUSALS, GRANTS};
use crate::wire::{errors, Arg};
use crate::{config, server};

/// A grant made: its token and deadline.
pub struct Grant {
    pub token: u64,
    pub deadline_ms: u64,
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
    if server::may_evict(flags) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        let policy = server::eviction_policy(ctx);
        return Err(Refusal::Error(errors::eviction(&policy)));
    }
    let token = node()
        .grant_at(&config::settings(), now_us)
        .map_err(|refused| match refused {
            GrantRefused::Quarantined { ms_left } => Refusal::Quarantined { ms_left },
            GrantRefused::Exhausted => Refusal::Error(errors::exhausted()),
        })?;
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
    Ok(Grant { token, deadline_ms })
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
