//! Locks that arrive from outside a dlock command — RESTORE (and MIGRATE's target side), an RDB
//! load (startup, DEBUG RELOAD, a replica's full sync), a first-version `DLOCK.APPLY` from an old
//! AOF — get the key-TTL rule ([`super::ttl`]) right after they are in the keyspace, and a
//! RESTOREd value raises the node counter to its token then (not while it loads: Redis may still
//! refuse it after the module's loader returned — a payload without its end marker — and a
//! refused RESTORE changes nothing).
//!
//! Until then its token is *arriving* ([`floor`]): a gate that arrives or moves meanwhile is
//! floored at the counter and every arriving token, so a master and its replica floor it alike
//! whenever each one's timer runs (a replica reads many commands before its timers run). A value
//! freed before it settled (refused, or dropped with a TTL already past) stops arriving.
//!
//! The loader ([`super::types`]) sees the value before Redis adds its key, so it only notes the
//! key's name here; a timer then settles every noted key once the server has stopped loading
//! (timers do not run during a blocking load, and during an asynchronous one — `repl-diskless-load
//! swapdb` — the loaded keys are not yet in the databases clients see, so the timer waits). After
//! a RESTORE the timer runs before the server reads its next command from the network. Nothing
//! here runs for a key that is not a lock: loading a million plain keys costs the module nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
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

/// RESTOREd values not settled yet, by address, with their newest token; and how many carry
/// each token (the largest is the floor). A mutex: a table may be freed on the lazyfree thread.
#[derive(Default)]
struct Arriving {
    by_value: HashMap<usize, u64>,
    tokens: BTreeMap<u64, usize>,
}

static ARRIVING: OnceLock<Mutex<Arriving>> = OnceLock::new();
/// How many values arrive: freeing a value looks at the map only when some do.
static ARRIVING_COUNT: AtomicUsize = AtomicUsize::new(0);

fn arriving() -> &'static Mutex<Arriving> {
    ARRIVING.get_or_init(Mutex::default)
}

/// A value RESTOREd at `value` carries `token`, which the counter takes once it settles.
pub fn arriving_token(value: *const std::ffi::c_void, token: u64) {
    if let Ok(mut a) = arriving().lock() {
        if a.by_value.insert(value as usize, token).is_none() {
            *a.tokens.entry(token).or_default() += 1;
            ARRIVING_COUNT.fetch_add(1, Relaxed);
        }
    }
}

/// The value at `value` settled (its token is in the counter now) or was freed.
pub fn arrived(value: *const std::ffi::c_void) {
    if ARRIVING_COUNT.load(Relaxed) == 0 {
        return;
    }
    if let Ok(mut a) = arriving().lock() {
        if let Some(token) = a.by_value.remove(&(value as usize)) {
            ARRIVING_COUNT.fetch_sub(1, Relaxed);
            if let Some(n) = a.tokens.get_mut(&token) {
                *n -= 1;
                if *n == 0 {
                    a.tokens.remove(&token);
                }
            }
        }
    }
}

/// The counter, or the largest token still arriving if that is larger: what a gate that
/// arrives or moves is floored at.
pub fn floor() -> u64 {
    let counter = crate::node::node().counter();
    if ARRIVING_COUNT.load(Relaxed) == 0 {
        return counter;
    }
    let arriving = arriving()
        .lock()
        .ok()
        .and_then(|a| a.tokens.keys().next_back().copied());
    counter.max(arriving.unwrap_or(0))
}

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
