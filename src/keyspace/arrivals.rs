//! Locks that arrive from outside a dlock command — RESTORE (and MIGRATE's target side), an RDB
//! load (startup, DEBUG RELOAD, a replica's full sync), a first-version `DLOCK.APPLY` from an old
//! AOF — get the key-TTL rule ([`super::ttl`]) right after they are in the keyspace (the node
//! counter rose to their tokens while they loaded, [`super::types`]).
//!
//! The loader ([`super::types`]) sees the value before Redis adds its key, so it only notes the
//! key's name here; a timer then settles every noted key once the server has stopped loading
//! (timers do not run during a blocking load, and during an asynchronous one — `repl-diskless-load
//! swapdb` — the loaded keys are not yet in the databases clients see, so the timer waits). After
//! a RESTORE the timer runs before the server reads its next command from the network. Nothing
//! here runs for a key that is not a lock: loading a million plain keys costs the module nothing.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use redis_module::{raw, Context};

use crate::server;

/// How often the settling timer looks again while the server is still loading.
const LOADING_RETRY: Duration = Duration::from_millis(10);

/// Keys settled per timer run: a million locks loaded at once are settled in steps of about a
/// millisecond, the server serving clients between them.
const STEP: usize = 2_000;

/// Keys noted since the timer last ran, and whether the timer is scheduled. A mutex, not a
/// thread-local: a loader thread must not lose what it noted (it is only ever contended by
/// nothing, so it costs an uncontended lock per arriving lock).
static PENDING: Mutex<Pending> = Mutex::new(Pending {
    keys: Vec::new(),
    scheduled: false,
});

/// What settles one key ([`super::ttl`], which reads values through the types that call in
/// here: installed at load rather than imported, so the two do not import each other).
static SETTLE: OnceLock<fn(&Context, i32, &[u8])> = OnceLock::new();

/// Installs how a noted key is settled; once, at load.
pub fn settle_with(settle: fn(&Context, i32, &[u8])) {
    let _ = SETTLE.set(settle);
}

struct Pending {
    keys: Vec<(i32, Vec<u8>)>,
    scheduled: bool,
}

/// The value being loaded by `io` is a lock: settle its key once it is in.
pub fn noted(io: *mut raw::RedisModuleIO) {
    let (Some(name_of), Some(db_of)) = (
        crate::api!(RedisModule_GetKeyNameFromIO),
        crate::api!(RedisModule_GetDbIdFromIO),
    ) else {
        return;
    };
    // SAFETY: `io` is the loader of the running rdb_load call.
    let (name, db) = unsafe { (name_of(io), db_of(io)) };
    if name.is_null() {
        return; // not loaded into a key (DEBUG's checks): nothing to settle
    }
    // The loader's name may live on its stack: copy the bytes.
    note(
        db,
        redis_module::RedisString::string_as_slice(name.cast_mut()).to_vec(),
    );
}

/// A lock entered `name` in database `db` by a path that leaves the key's TTL to be read later
/// (a first-version `DLOCK.APPLY` without `PXAT`, whose key TTL comes in the next command):
/// settle it once the server is done loading, or right after this command.
pub fn note(db: i32, name: Vec<u8>) {
    let schedule = {
        let Ok(mut pending) = PENDING.lock() else {
            return;
        };
        pending.keys.push((db, name));
        !std::mem::replace(&mut pending.scheduled, true)
    };
    if schedule {
        if let Some(ctx) = server::detached() {
            ctx.create_timer(Duration::ZERO, settle_all, ());
        }
    }
}

fn settle_all(ctx: &Context, _: ()) {
    if server::is_loading() {
        ctx.create_timer(LOADING_RETRY, settle_all, ());
        return;
    }
    let (keys, more) = match PENDING.lock() {
        Ok(mut pending) => {
            let keep = pending.keys.len().saturating_sub(STEP);
            let step = pending.keys.split_off(keep);
            pending.scheduled = keep > 0;
            (step, keep > 0)
        }
        Err(_) => return,
    };
    if more {
        ctx.create_timer(Duration::ZERO, settle_all, ());
    }
    let Some(settle) = SETTLE.get() else {
        return;
    };
    for (db, name) in keys {
        settle(ctx, db, &name);
    }
}
