//! One rule for a lock key's TTL, however the value arrived or the TTL changed: **the key expires
//! at the lock's deadline** (or earlier, after a shortening PEXPIRE, which ends the lock early).
//! RESTORE sets whatever TTL its caller passed (0: none), an RDB may carry a key TTL that does not
//! match, PERSIST removes it and PEXPIRE can push it out: a lock key that outlived its lock would
//! stay in the keyspace for good, invisible to `volatile-*` eviction.
//!
//! The deadline is absolute, so masters, replicas and AOF replays set the same expiry without
//! anything replicated; a deadline already past makes the key expire at once. Who applies it:
//! every dlock write (it sets the key's expiry with the lease), [`super::arrivals`] right after a
//! RESTORE or a load, and [`super::sweep`] for TTLs changed by plain commands. None of them
//! watches the keyspace: an `EXPIRE` or `SET ... PX` of a key that is not a lock costs the module
//! nothing.

use std::os::raw::c_int;
use std::ptr::NonNull;

use redis_module::{raw, Context, RedisString};

use super::compact::CompactMut;
use super::form::Value;
use super::values::value_of;

/// How the key's expiry is brought to the lock's deadline.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Align {
    /// Set to the deadline, later or earlier (the value just arrived).
    Exactly,
    /// Pulled back to the deadline if later or absent; an earlier expiry (a shortening PEXPIRE)
    /// stands and ends the lock early.
    NoLater,
}

/// Opens `name` in database `db` for writing, without side effects where the server supports the
/// flags (7.2+; older servers ignore the flags they do not know): no LRU touch, no event, no
/// hit/miss stats, no lazy expiry. Runs `f` on the open key, then closes it.
pub fn with_key(ctx: &Context, db: i32, name: &[u8], f: impl FnOnce(NonNull<raw::RedisModuleKey>)) {
    let (Some(select), Some(open), Some(close)) = (
        crate::api!(RedisModule_SelectDb),
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_CloseKey),
    ) else {
        return;
    };
    // SAFETY: a live context (a timer's or an event's).
    if unsafe { select(ctx.ctx, db) } != raw::REDISMODULE_OK as c_int {
        return;
    }
    let mode = raw::REDISMODULE_READ
        | raw::REDISMODULE_WRITE
        | raw::REDISMODULE_OPEN_KEY_NOTOUCH
        | raw::REDISMODULE_OPEN_KEY_NONOTIFY
        | raw::REDISMODULE_OPEN_KEY_NOSTATS
        | raw::REDISMODULE_OPEN_KEY_NOEXPIRE;
    // Binary-safe: a key name may hold any byte, NUL included (create_string panics on NUL).
    let key_name = RedisString::create_from_slice(ctx.ctx, name);
    // SAFETY: the context and a key name that outlives the open key.
    let Some(handle) = NonNull::new(unsafe { open(ctx.ctx, key_name.inner, mode as c_int) }) else {
        return;
    };
    f(handle);
    // SAFETY: opened above.
    unsafe { close(handle.as_ptr()) };
}

/// Settles a key a lock just arrived in ([`super::arrivals`]): the node counter rises to its
/// newest token and its expiry is set to the deadline.
pub fn settle_arrived(ctx: &Context, db: i32, name: &[u8]) {
    with_key(ctx, db, name, |key| {
        if let Ok(Some(value)) = value_of(key) {
            // SAFETY: our value in the key just opened, only read.
            crate::node::node().raise_counter(unsafe { value.newest_token() });
            super::arrivals::arrived(value.address());
        }
        super::values::settle_form(key);
        settle(key, Align::Exactly);
        super::gate::settle_arrived(key);
    });
}

/// Applies the rule to the lock in an open key, if it holds one.
pub fn settle(key: NonNull<raw::RedisModuleKey>, align: Align) {
    if let Ok(Some(value)) = value_of(key) {
        // SAFETY: our value in a key the caller opened for writing; nothing else touches it.
        let deadline_ms = unsafe {
            settle_follower(key, value);
            value.last_deadline()
        };
        expire_at_deadline(key, deadline_ms, align);
    }
}

/// Whether [`settle`] would change the lock in an open key (read only): it follows its key's
/// TTL, or the key outlives it.
pub fn unsettled(key: NonNull<raw::RedisModuleKey>) -> bool {
    let Ok(Some(value)) = value_of(key) else {
        return false;
    };
    // SAFETY: our value in an open key, only read.
    if unsafe { value.follows_key_ttl() } {
        return true;
    }
    // SAFETY: as above.
    let deadline = i64::try_from(unsafe { value.last_deadline() }).unwrap_or(i64::MAX);
    !matches!(abs_expire(key), Some(at) if at >= 0 && at <= deadline)
}

fn abs_expire(key: NonNull<raw::RedisModuleKey>) -> Option<i64> {
    // SAFETY: an open key of the running callback.
    crate::api!(RedisModule_GetAbsExpire).map(|get| unsafe { get(key.as_ptr()) })
}

/// A plain lock whose key's TTL rules below its deadline (a version-1 lock, or an AOF's
/// `DLOCK.APPLY` without `PXAT`) takes that TTL as its deadline once the key's TTL is known,
/// and from then on is like any other.
///
/// # Safety
/// `value` must be the live value of `key`, which nothing else touches during the call.
unsafe fn settle_follower(key: NonNull<raw::RedisModuleKey>, value: Value) {
    let Value::Compact(ptr) = value else {
        return;
    };
    // SAFETY: the caller's promise.
    let mut lock = unsafe { CompactMut::new(ptr) };
    if !lock.follows_key_ttl() {
        return;
    }
    if let Some(Ok(ttl)) = abs_expire(key).map(u64::try_from) {
        lock.set_deadline(lock.deadline_ms().min(ttl));
    }
    lock.set_follows_key_ttl(false);
}

/// Sets the key's expiry to the lock's deadline as `align` says.
fn expire_at_deadline(key: NonNull<raw::RedisModuleKey>, deadline_ms: u64, align: Align) {
    let (Some(current), Some(set)) = (abs_expire(key), crate::api!(RedisModule_SetAbsExpire))
    else {
        return;
    };
    let deadline = i64::try_from(deadline_ms).unwrap_or(i64::MAX);
    let keep = match align {
        Align::Exactly => current == deadline,
        Align::NoLater => current >= 0 && current <= deadline,
    };
    if !keep {
        // SAFETY: a key opened for writing by the caller, open for this call.
        unsafe { set(key.as_ptr(), deadline) };
    }
}
