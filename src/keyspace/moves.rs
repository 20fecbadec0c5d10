//! Locks carried to another key, and lock keys leaving the keyspace.
//!
//! `RENAME`, `MOVE` and `SWAPDB` carry a lock, with its token, to another resource: the lock is
//! marked moved and is never held again (its token was issued for another resource; moving it
//! back later must not revive it, or the resource's token order could run backwards). RENAME and
//! MOVE add the value under its new name and then unlink it from the old one, where the data
//! types' `unlink` callback marks it ([`super::unlink`]); SWAPDB has its server event, here.
//! Marking is deterministic, so masters, replicas and AOF replays agree without replicating
//! anything, and no command that is not about a lock pays for it (no keyspace subscription).
//!
//! A lock RESTOREd under another name keeps its place fingerprint and is never held there
//! either (see [`super::places::place`]). The key-TTL rule lives in [`super::ttl`].
//!
//! Gates move the same ways and are floored at the node counter as they move
//! ([`super::gate`]). After a SWAPDB the clients waiting on a key of either database wait on
//! another resource than they asked for: the observers of those databases are answered, and
//! the layer above ([`on_swapped`]) hands each waited-on key to its waiters.

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use redis_module::raw;

use super::values::value_of;

/// What the layer above does after a SWAPDB of the two databases (its waiters).
static ON_SWAPPED: std::sync::OnceLock<fn(i32, i32)> = std::sync::OnceLock::new();

/// Installs the hook called with the two databases of a SWAPDB; once, at load.
pub fn on_swapped(hook: fn(i32, i32)) {
    let _ = ON_SWAPPED.set(hook);
}

/// Subscribes to SWAPDB; called once at load.
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
    let (first, second) = (info.dbnum_first, info.dbnum_second);
    if first == second {
        return; // `SWAPDB 0 0` moves nothing: every lock stays where it was granted
    }
    for db in [first, second] {
        mark_all_moved(ctx, db);
    }
    super::ghosts::swapped(first, second);
    super::observers::swapped(first, second);
    if let Some(hook) = ON_SWAPPED.get() {
        hook(first, second);
    }
}

/// Marks every lock and gate in `db` moved (SWAPDB is rare; this is a scan of the database).
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
    let Some(key) = NonNull::new(key) else {
        return;
    };
    if let Ok(Some(value)) = value_of(key) {
        // SAFETY: our value in the key the scan opened for this call.
        unsafe { value.mark_moved() };
    } else {
        super::gate::mark_moved(key);
    }
}
