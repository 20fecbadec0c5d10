//! Keyspace events that carry a lock to another key, and what they mean for it:
//!
//! - `rename_to`, `move_to` and `SWAPDB`: the lock is marked moved and is never held again
//!   (its token was issued for another resource; moving it back later must not revive it, or
//!   the resource's token order could run backwards). Marking is deterministic, so masters,
//!   replicas and AOF replays agree without replicating anything.
//! - `restore` (RESTORE, and MIGRATE's target side): the counter rises to the restored token
//!   now that the value is in the keyspace; a RESTORE refused earlier changed nothing.
//!
//! And one rule for the key's TTL, however the value arrived or the TTL changed: **the key expires
//! at the lock's deadline** (or earlier, after a shortening PEXPIRE, which ends the lock early).
//! RESTORE sets whatever TTL its caller passed (0: none), an RDB may carry a key TTL that does not
//! match, PERSIST removes it and PEXPIRE can push it out: a lock key that outlived its lock would
//! stay in the keyspace for good, invisible to `volatile-*` eviction. So `restore` and `loaded`
//! set the key's expiry to the deadline, and `persist` and `expire` pull it back to the deadline
//! when it went past it. The deadline is absolute, so masters, replicas and AOF replays set the
//! same expiry without anything replicated; a deadline already past makes the key expire at once.
//!
//! A lock RESTOREd under another name keeps its place fingerprint and is never held there
//! either (see [`super::place`]).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::NonNull;

use redis_module::raw;

use super::compact::{CompactMut, CompactRef};
use super::table::HolderTable;
use super::values::{value_of, Value};
use super::MOVED;
use crate::node::node;

/// Subscribes to SWAPDB; called once at load. The keyspace events that move a lock reach
/// [`on_keyspace_event`] through the module's one keyspace subscription
/// (`crate::waiting::events`).
pub fn watch(ctx: *mut raw::RedisModuleCtx) -> Result<(), &'static str> {
    let swapdb = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_SWAPDB,
        dataver: 1,
    };
    match raw::subscribe_to_server_event(ctx, swapdb, Some(on_swapdb)) {
        raw::Status::Ok => Ok(()),
        raw::Status::Err => Err("cannot subscribe to SWAPDB events"),
    }
}

/// The classes of keyspace event [`on_keyspace_event`] needs.
pub const EVENT_CLASSES: c_int =
    (raw::REDISMODULE_NOTIFY_GENERIC | raw::REDISMODULE_NOTIFY_LOADED) as c_int;

/// A keyspace event of one of [`EVENT_CLASSES`]: a lock carried to `key`, restored, loaded or
/// given another TTL is brought in line with its rules.
pub fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) {
    // Without a single lock in the keyspace no event can concern one: skip the key lookup every
    // `EXPIRE` or `SET ... PX` would otherwise pay (a value RESTOREd or loaded is counted before
    // its event fires).
    if event.is_null() || crate::stats::locks_held() == 0 {
        return;
    }
    // SAFETY: Redis passes a NUL-terminated event name for the duration of the call.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    let change = match event {
        b"rename_to" | b"move_to" => Change::Moved,
        b"restore" => Change::Restored,
        b"loaded" => Change::Loaded,
        b"persist" | b"expire" => Change::KeyTtl,
        _ => return,
    };
    if change == Change::Loaded {
        with_copied_name(key, |copy| with_lock(ctx, copy, change));
    } else {
        with_lock(ctx, key, change);
    }
}

/// Runs `f` with a heap copy of `key`: the RDB loader passes the name of a `loaded` key as a
/// string on its stack, which OpenKey must not retain (Redis aborts: "You tried to retain an
/// object allocated in the stack").
fn with_copied_name(key: *mut raw::RedisModuleString, f: impl FnOnce(*mut raw::RedisModuleString)) {
    let (Some(copy), Some(free)) = (
        crate::api!(RedisModule_CreateStringFromString),
        crate::api!(RedisModule_FreeString),
    ) else {
        return;
    };
    // SAFETY: `key` is valid for the callback; without a context the copy is ours to free.
    let copied = unsafe { copy(std::ptr::null_mut(), key) };
    if copied.is_null() {
        return;
    }
    f(copied);
    // SAFETY: created above, no longer used (OpenKey's own reference went with CloseKey).
    unsafe { free(std::ptr::null_mut(), copied) };
}

/// What a keyspace event did to a lock key.
#[derive(Clone, Copy, PartialEq)]
enum Change {
    /// RENAME or MOVE carried the lock here.
    Moved,
    /// RESTORE (or MIGRATE) put the lock here, with whatever key TTL its caller chose.
    Restored,
    /// Loaded from an RDB (at start, DEBUG RELOAD, a replica's full sync).
    Loaded,
    /// PERSIST or an EXPIRE-family command changed the key's TTL.
    KeyTtl,
}

/// Applies `change` to the lock under `key`, if it holds one.
fn with_lock(ctx: *mut raw::RedisModuleCtx, key: *mut raw::RedisModuleString, change: Change) {
    let (Some(open), Some(close)) = (
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_CloseKey),
    ) else {
        return;
    };
    // Without side effects where the server supports the flags (7.2+; older servers ignore the
    // flags they do not know): no LRU touch, no event, no hit/miss stats, no lazy expiry.
    let mode = raw::REDISMODULE_READ
        | raw::REDISMODULE_WRITE
        | raw::REDISMODULE_OPEN_KEY_NOTOUCH
        | raw::REDISMODULE_OPEN_KEY_NONOTIFY
        | raw::REDISMODULE_OPEN_KEY_NOSTATS
        | raw::REDISMODULE_OPEN_KEY_NOEXPIRE;
    // SAFETY: the callback's context and key, valid for this call.
    let Some(handle) = NonNull::new(unsafe { open(ctx, key, mode as c_int) }) else {
        return;
    };
    if let Ok(Some(value)) = value_of(handle) {
        if change != Change::Moved {
            // SAFETY: our value in a key opened just now; nothing else touches it.
            unsafe { settle_follower(handle, value) };
        }
        // SAFETY: as above.
        let (token, deadline_ms) = unsafe { newest_and_last(value) };
        match change {
            // SAFETY: as above; the shared view above is no longer used.
            Change::Moved => unsafe { mark_value_moved(value) },
            Change::Restored => {
                node().raise_counter(token);
                expire_at_deadline(handle, deadline_ms, Align::Exactly);
            }
            Change::Loaded => expire_at_deadline(handle, deadline_ms, Align::Exactly),
            Change::KeyTtl => expire_at_deadline(handle, deadline_ms, Align::NoLater),
        }
    }
    // SAFETY: opened above.
    unsafe { close(handle.as_ptr()) };
}

/// How the key's expiry is brought to the lock's deadline.
#[derive(Clone, Copy, PartialEq)]
enum Align {
    /// Set to the deadline, later or earlier (the value just arrived).
    Exactly,
    /// Pulled back to the deadline if later or absent; an earlier expiry (a shortening PEXPIRE)
    /// stands and ends the lock early.
    NoLater,
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
    // SAFETY: an open key of the running callback.
    let ttl = crate::api!(RedisModule_GetAbsExpire).map_or(-1, |get| unsafe { get(key.as_ptr()) });
    if let Ok(ttl) = u64::try_from(ttl) {
        lock.set_deadline(lock.deadline_ms().min(ttl));
    }
    lock.set_follows_key_ttl(false);
}

/// Sets the key's expiry to the lock's deadline as `align` says.
fn expire_at_deadline(key: NonNull<raw::RedisModuleKey>, deadline_ms: u64, align: Align) {
    let (Some(get), Some(set)) = (
        crate::api!(RedisModule_GetAbsExpire),
        crate::api!(RedisModule_SetAbsExpire),
    ) else {
        return;
    };
    let deadline = i64::try_from(deadline_ms).unwrap_or(i64::MAX);
    // SAFETY: a key opened for writing by the caller, open for this call.
    let current = unsafe { get(key.as_ptr()) };
    let keep = match align {
        Align::Exactly => current == deadline,
        Align::NoLater => current >= 0 && current <= deadline,
    };
    if !keep {
        // SAFETY: as above.
        unsafe { set(key.as_ptr(), deadline) };
    }
}

extern "C" fn on_swapdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _sub: u64,
    data: *mut c_void,
) {
    let Some(info) = NonNull::new(data.cast::<raw::RedisModuleSwapDbInfo>()) else {
        return;
    };
    // SAFETY: Redis passes the SWAPDB info for the duration of the call.
    let info = unsafe { info.as_ref() };
    for db in [info.dbnum_first, info.dbnum_second] {
        mark_all_moved(ctx, db);
    }
}

/// Marks every lock in `db` moved (SWAPDB is rare; this is a scan of the database).
fn mark_all_moved(ctx: *mut raw::RedisModuleCtx, db: i32) {
    let (Some(select), Some(create), Some(scan), Some(free)) = (
        crate::api!(RedisModule_SelectDb),
        crate::api!(RedisModule_ScanCursorCreate),
        crate::api!(RedisModule_Scan),
        crate::api!(RedisModule_ScanCursorDestroy),
    ) else {
        return;
    };
    // SAFETY: the event's context; the cursor is created and destroyed here.
    unsafe {
        if select(ctx, db) != raw::REDISMODULE_OK as c_int {
            return;
        }
        let cursor = create();
        while scan(ctx, cursor, Some(mark_moved), std::ptr::null_mut()) != 0 {}
        free(cursor);
    }
}

extern "C" fn mark_moved(
    _ctx: *mut raw::RedisModuleCtx,
    _name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    _data: *mut c_void,
) {
    if let Some(Ok(Some(value))) = NonNull::new(key).map(value_of) {
        // SAFETY: our value in the key the scan opened for this call.
        unsafe { mark_value_moved(value) };
    }
}

/// The value's newest token (the counter rises to it) and its last deadline (the key's TTL).
///
/// # Safety
/// `value` must be a live dlock value that nothing writes during the call.
unsafe fn newest_and_last(value: Value) -> (u64, u64) {
    match value {
        Value::Compact(ptr) => {
            // SAFETY: the caller's promise.
            let lock = unsafe { CompactRef::new(ptr) };
            (lock.token(), lock.deadline_ms())
        }
        Value::Table(ptr) => {
            // SAFETY: the caller's promise; a dlockmany value is a boxed table.
            let table = unsafe { &*ptr.as_ptr().cast::<HolderTable>() };
            (table.newest_token(), table.last_deadline().unwrap_or(0))
        }
    }
}

/// Marks the value as granted elsewhere: never held under the key it was carried to.
///
/// # Safety
/// `value` must be a live dlock value that nothing else reads or writes during the call.
unsafe fn mark_value_moved(value: Value) {
    match value {
        // SAFETY: the caller's promise.
        Value::Compact(ptr) => unsafe { CompactMut::new(ptr) }.set_place(MOVED),
        // SAFETY: the caller's promise; a dlockmany value is a boxed table.
        Value::Table(ptr) => unsafe { &mut *ptr.as_ptr().cast::<HolderTable>() }.place = MOVED,
    }
}
