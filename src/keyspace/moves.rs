//! Keyspace events that carry a lock to another key, and what they mean for it:
//!
//! - `rename_to`, `move_to` and `SWAPDB`: the lock is marked moved and is never held again
//!   (its token was issued for another resource; moving it back later must not revive it, or
//!   the resource's token order could run backwards). Marking is deterministic, so masters,
//!   replicas and AOF replays agree without replicating anything.
//! - `restore` (RESTORE, and MIGRATE's target side): the counter rises to the restored token
//!   now that the value is in the keyspace; a RESTORE refused earlier changed nothing.
//!
//! A lock RESTOREd under another name keeps its place fingerprint and is never held there
//! either (see [`super::place`]).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::NonNull;

use redis_module::raw;

use super::persistence::value_of;
use super::value::{LockMut, LockRef};
use super::MOVED;
use crate::node::node;

/// Subscribes to generic keyspace events and to SWAPDB; called once at load.
pub fn watch(ctx: *mut raw::RedisModuleCtx) -> Result<(), &'static str> {
    let subscribe =
        crate::api!(RedisModule_SubscribeToKeyspaceEvents).ok_or("no keyspace events API")?;
    // SAFETY: the module's load context; the callback is a static function.
    let subscribed = unsafe {
        subscribe(
            ctx,
            raw::REDISMODULE_NOTIFY_GENERIC as c_int,
            Some(on_generic),
        )
    };
    if subscribed != raw::REDISMODULE_OK as c_int {
        return Err("cannot subscribe to keyspace events");
    }
    let swapdb = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_SWAPDB,
        dataver: 1,
    };
    match raw::subscribe_to_server_event(ctx, swapdb, Some(on_swapdb)) {
        raw::Status::Ok => Ok(()),
        raw::Status::Err => Err("cannot subscribe to SWAPDB events"),
    }
}

extern "C" fn on_generic(
    ctx: *mut raw::RedisModuleCtx,
    _kind: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if event.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    // SAFETY: Redis passes a NUL-terminated event name for the duration of the call.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    match event {
        b"rename_to" | b"move_to" => with_lock(ctx, key, |mut lock| lock.set_place(MOVED)),
        b"restore" => with_lock(ctx, key, |_| {}),
        _ => {}
    }
    raw::REDISMODULE_OK as c_int
}

/// Runs `change` on the lock value under `key`, if it is one; a restored lock's token raises
/// the counter on the way.
fn with_lock(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    change: impl FnOnce(LockMut<'_>),
) {
    let (Some(open), Some(close)) = (
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_CloseKey),
    ) else {
        return;
    };
    // Read-only and without side effects where the server supports them (7.2+; older servers
    // ignore the flags they do not know).
    let mode = raw::REDISMODULE_READ
        | raw::REDISMODULE_OPEN_KEY_NOTOUCH
        | raw::REDISMODULE_OPEN_KEY_NONOTIFY
        | raw::REDISMODULE_OPEN_KEY_NOSTATS
        | raw::REDISMODULE_OPEN_KEY_NOEXPIRE;
    // SAFETY: the callback's context and key, valid for this call.
    let Some(handle) = NonNull::new(unsafe { open(ctx, key, mode as c_int) }) else {
        return;
    };
    if let Ok(Some(value)) = value_of(handle) {
        // SAFETY: our value in a key opened just now; nothing else touches it during the call.
        let token = unsafe { LockRef::new(value) }.record().token;
        node().raise_counter(token);
        // SAFETY: as above; the shared view above is no longer used.
        change(unsafe { LockMut::new(value) });
    }
    // SAFETY: opened above.
    unsafe { close(handle.as_ptr()) };
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
        unsafe { LockMut::new(value) }.set_place(MOVED);
    }
}
