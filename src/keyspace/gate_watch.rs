//! What the server does to gate keys without a dlock command, heard through keyspace
//! notifications once this node holds a gate.
//!
//! **A gate key never keeps a TTL.** A gate that expired would vanish, and with it the floor
//! that keeps stale writers out; reviving it after the fact leaves windows (an RDB saved or
//! loaded in between, a replica reading it as expired, a read in the same event-loop turn). So
//! the TTL is taken off as it is set: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (the
//! `expire` notification) and a `RESTORE` / `MIGRATE` with a TTL (`restore`).
//! - Redis 7.2+ and Valkey: a post-notification job, right after the command and within it (a
//!   MULTI or a script included), removes it and replicates `PERSIST`, so replicas and the AOF
//!   see the TTL come and go inside one transaction.
//! - Redis 7.0 (no such jobs): removed in the notification itself, on every node alike — a
//!   replica and an AOF replay run the same notification for the same command — and nothing is
//!   replicated (on 7.0 it would reach replicas before the command it answers).
//!
//! `del` ends the note of an unlinked gate and forgets its ghost; `evicted` and `expired`
//! make it a ghost ([`super::ghosts`]).
//!
//! **Not on Valkey 8**, which would leave a client in another database after `MOVE` if a module
//! listened ([`crate::server::notifications_switch_databases`]): there nothing is subscribed, a
//! TTL set on a gate stays and an evicted gate stays gone (docs/compatibility.md says so).
//!
//! **What it costs.** Nothing until the node stores its first gate. From then on every generic
//! keyspace event of the server (DEL, EXPIRE, RENAME...), expiry and eviction calls the module
//! once: Redis builds a context for it, and the callback returns after a look at the event's
//! name, opening the key only for `expire` and `restore` (docs/operations.md).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use redis_module::{raw, RedisString};

use super::ghosts;

/// Subscribed (once, when the first gate is stored or loaded).
static WATCHING: AtomicBool = AtomicBool::new(false);

/// This node holds a gate: from now on, hear what the server does to keys.
pub fn watch() {
    if WATCHING.load(Relaxed) {
        return;
    }
    let (Some(ctx), Some(subscribe)) = (
        crate::server::detached(),
        crate::api!(RedisModule_SubscribeToKeyspaceEvents),
    ) else {
        return;
    };
    if crate::server::notifications_switch_databases(&ctx) {
        WATCHING.store(true, Relaxed);
        ctx.log_warning(
            "dlock: this server (Valkey 8) would switch a client's database on MOVE if a module \
             listened to keyspace events: dlock does not, so a TTL set on a gate is not taken off \
             and an evicted gate does not come back here (docs/compatibility.md)",
        );
        return;
    }
    let types = (raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED) as c_int;
    WATCHING.store(true, Relaxed);
    // SAFETY: the module's detached context, on the main thread; the callback is static.
    if unsafe { subscribe(ctx.ctx, types, Some(on_event)) } != raw::REDISMODULE_OK as c_int {
        WATCHING.store(false, Relaxed);
    }
}

extern "C" fn on_event(
    ctx: *mut raw::RedisModuleCtx,
    kind: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    let noted = ghosts::take_unlinked();
    let (Some(db_of), false) = (crate::api!(RedisModule_GetSelectedDb), event.is_null()) else {
        return raw::REDISMODULE_OK as c_int;
    };
    // SAFETY: the notification's context (selected on the key's database) and its event name.
    let (db, event) = unsafe { (db_of(ctx), CStr::from_ptr(event).to_bytes()) };
    let name = RedisString::string_as_slice(key);
    let gone = (raw::REDISMODULE_NOTIFY_EXPIRED | raw::REDISMODULE_NOTIFY_EVICTED) as c_int;
    if kind & gone != 0 {
        ghosts::gone(db, name, noted);
    } else {
        match event {
            b"del" => ghosts::forget(db, name),
            b"expire" | b"restore" => persist_gate(ctx, key),
            _ => {}
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// Takes the TTL off the gate in `key`, if it holds one with a TTL (see the module docs).
fn persist_gate(ctx: *mut raw::RedisModuleCtx, key: *mut raw::RedisModuleString) {
    if !has_ttl_gate(ctx, key, raw::REDISMODULE_READ) {
        return;
    }
    match crate::api!(RedisModule_AddPostNotificationJob) {
        Some(add) => {
            let name = RedisString::string_as_slice(key).to_vec();
            let job = Box::into_raw(Box::new(name)).cast::<c_void>();
            // SAFETY: the notification's context; the job owns `job` until `free_job`. A
            // replica or a loading server refuses jobs: its master's PERSIST (or the AOF's) follows.
            if unsafe { add(ctx, Some(persist_job), job, Some(free_job)) }
                != raw::REDISMODULE_OK as c_int
            {
                free_job(job);
            }
        }
        None => {
            has_ttl_gate(ctx, key, raw::REDISMODULE_READ | raw::REDISMODULE_WRITE);
        }
    }
}

/// Opens `key` with `mode`: whether it holds a gate with a TTL; opened for writing, the TTL is
/// then taken off.
fn has_ttl_gate(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    mode: u32,
) -> bool {
    let (Some(open), Some(close), Some(get), Some(set)) = (
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_CloseKey),
        crate::api!(RedisModule_GetExpire),
        crate::api!(RedisModule_SetExpire),
    ) else {
        return false;
    };
    // SAFETY: a live context and key name; the key is closed below.
    let Some(handle) = NonNull::new(unsafe { open(ctx, key, mode as c_int) }) else {
        return false;
    };
    let gate = matches!(super::gate::read(handle), Ok(Some(_)));
    // SAFETY: an open key.
    let ttl = gate && unsafe { get(handle.as_ptr()) } != raw::REDISMODULE_NO_EXPIRE as i64;
    if ttl && mode & raw::REDISMODULE_WRITE != 0 {
        // SAFETY: a key opened for writing.
        unsafe { set(handle.as_ptr(), raw::REDISMODULE_NO_EXPIRE as i64) };
    }
    // SAFETY: opened above, closed once.
    unsafe { close(handle.as_ptr()) };
    ttl
}

/// Redis 7.2+: right after the command, the TTL off and `PERSIST` replicated.
extern "C" fn persist_job(ctx: *mut raw::RedisModuleCtx, job: *mut c_void) {
    // SAFETY: the job's own data, a boxed key name, alive until `free_job`.
    let Some(name) = (unsafe { job.cast::<Vec<u8>>().as_ref() }) else {
        return;
    };
    let key = RedisString::create_from_slice(ctx, name);
    if has_ttl_gate(
        ctx,
        key.inner,
        raw::REDISMODULE_READ | raw::REDISMODULE_WRITE,
    ) {
        if let Some(replicate) = crate::api!(RedisModule_Replicate) {
            // SAFETY: the job's context (on the key's database) and a live key name.
            unsafe { replicate(ctx, c"PERSIST".as_ptr(), c"s".as_ptr(), key.inner) };
        }
    }
}

extern "C" fn free_job(job: *mut c_void) {
    if !job.is_null() {
        // SAFETY: from Box::into_raw in `persist_gate`, freed once.
        drop(unsafe { Box::from_raw(job.cast::<Vec<u8>>()) });
    }
}
