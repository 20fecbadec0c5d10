//! What the server does to gate keys without a dlock command, heard through keyspace
//! notifications once this node holds a gate.
//!
//! **A gate key never keeps a TTL.** A gate that expired would vanish, and with it the floor
//! that keeps stale writers out; reviving it after the fact leaves windows (an RDB saved or
//! loaded in between, a replica reading it as expired, a read in the same event-loop turn). So
//! the TTL is taken off as it is set: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (the
//! `expire` notification) and a `RESTORE` / `MIGRATE` with a TTL (`restore`) — in the
//! notification itself, inside the command that set it, on every node alike: a replica and an
//! AOF replay run the same notification for the same command, whatever version wrote the
//! stream, so nothing is replicated. (A post-notification job, Redis 7.2's way to write after a
//! notification, would run after the whole transaction, when a `RENAME` in it may have carried
//! the gate elsewhere, and is refused on replicas and while loading.) The write is only the
//! removal of the key's expiry: it sends no notification and propagates nothing.
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
//! name, opening the key only for `expire` and `restore` (docs/bench/tax.md).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;

use redis_module::{raw, RedisString};

use super::ghosts;

/// Subscribed (once, when the first gate is stored or loaded).
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Whether an open key holds a gate: the gate's own reader, handed over by [`watch`] (so that
/// this file, which the gate calls, does not call the gate back).
static IS_GATE: OnceLock<fn(NonNull<raw::RedisModuleKey>) -> bool> = OnceLock::new();

/// This node holds a gate: from now on, hear what the server does to keys. `is_gate` tells a
/// gate key from any other.
pub fn watch(is_gate: fn(NonNull<raw::RedisModuleKey>) -> bool) {
    if WATCHING.load(Relaxed) {
        return;
    }
    let _ = IS_GATE.set(is_gate);
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
    let mode = raw::REDISMODULE_READ | raw::REDISMODULE_WRITE;
    let (Some(open), Some(close), Some(get), Some(set)) = (
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_CloseKey),
        crate::api!(RedisModule_GetExpire),
        crate::api!(RedisModule_SetExpire),
    ) else {
        return;
    };
    // SAFETY: a live context and key name; the key is closed below.
    let Some(handle) = NonNull::new(unsafe { open(ctx, key, mode as c_int) }) else {
        return;
    };
    let gate = IS_GATE.get().is_some_and(|is_gate| is_gate(handle));
    // SAFETY: an open key.
    let ttl = gate && unsafe { get(handle.as_ptr()) } != raw::REDISMODULE_NO_EXPIRE as i64;
    if ttl {
        // SAFETY: a key opened for writing.
        unsafe { set(handle.as_ptr(), raw::REDISMODULE_NO_EXPIRE as i64) };
    }
    // SAFETY: opened above, closed once.
    unsafe { close(handle.as_ptr()) };
}
