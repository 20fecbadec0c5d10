//! Gates that expire or are evicted come back. A gate is the memory of the highest token its data
//! was written under: if it vanished, the next GUARD would find no gate and let any token through
//! — a stale writer's included. `DEL` / `UNLINK` and the flushes are the deliberate reset; a TTL
//! set by hand (`PEXPIRE gate 100`, a RESTORE with a TTL) or an eviction under an `allkeys-*`
//! policy is not, so such a gate is put back, without a TTL, at the token it had.
//!
//! How it is heard, without taxing other keys: a gate's `unlink` callback notes the gate that is
//! leaving its key (it cannot tell why); Redis sends the `expired` or `evicted` keyspace
//! notification right after, in the same call, for an expiry or an eviction only. The module
//! subscribes to those two notifications once this node has stored a gate (a node without gates
//! pays nothing; one with gates pays a callback per expired or evicted key, which returns at once
//! unless a gate was just unlinked). The gate is then a *ghost*: readers (GUARD, CHECK,
//! RAISEGATE) see it in place of the empty key, and a timer stores it again right after the
//! command — replicated and written to the AOF as `DLOCK.RAISEGATE`, after the expiry's `DEL`.
//! Storing from the notification itself is not allowed (Redis 7.2+), and on 7.0 its effect would
//! reach replicas before the `DEL`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use redis_module::{raw, Context};

use crate::server;

/// A notification this soon after a gate's unlink is about that unlink: Redis sends it in the
/// same call, microseconds later. A stale note (a DEL'd gate, then another key of the same name
/// expiring later) is never matched.
const SAME_DELETION: Duration = Duration::from_millis(1);

/// How often the timer looks again while writes are paused (CLIENT PAUSE, a failover): a write
/// replicated then would abort the server.
const PAUSED_RETRY: Duration = Duration::from_millis(10);

/// The gate last unlinked other than by a dlock command.
struct Unlinked {
    db: i32,
    name: Vec<u8>,
    token: u64,
    at: Instant,
}

/// Ghosts by database, then key name: the token each gate had.
type Ghosts = HashMap<i32, HashMap<Vec<u8>, u64>>;

thread_local! {
    /// Only the main thread unlinks keys and runs notifications.
    static UNLINKED: RefCell<Option<Unlinked>> = const { RefCell::new(None) };
    static GHOSTS: RefCell<Ghosts> = RefCell::default();
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Subscribed to `expired` and `evicted` (once, when the first gate is stored or loaded).
static WATCHING: AtomicBool = AtomicBool::new(false);

/// What stores a ghost again: installed at load by the layer that replicates (the command
/// layer's gate writer), so that this layer does not depend on it.
static REVIVE: OnceLock<Revive> = OnceLock::new();

/// Stores the gate of database, key name and token again.
pub type Revive = fn(&Context, i32, &[u8], u64);

/// Installs how a ghost is stored again; once, at load.
pub fn revive_with(revive: Revive) {
    let _ = REVIVE.set(revive);
}

/// This node holds a gate: from now on, hear expiries and evictions.
pub fn watch() {
    if WATCHING.load(Relaxed) {
        return;
    }
    let (Some(ctx), Some(subscribe)) = (
        server::detached(),
        crate::api!(RedisModule_SubscribeToKeyspaceEvents),
    ) else {
        return;
    };
    let types = (raw::REDISMODULE_NOTIFY_EXPIRED | raw::REDISMODULE_NOTIFY_EVICTED) as c_int;
    WATCHING.store(true, Relaxed);
    // SAFETY: the module's detached context, on the main thread; the callback is static.
    if unsafe { subscribe(ctx.ctx, types, Some(on_gone)) } != raw::REDISMODULE_OK as c_int {
        WATCHING.store(false, Relaxed);
    }
}

/// A gate with `token` is leaving the key of `ctx` (the data type's unlink callback).
pub fn unlinked(ctx: *mut raw::RedisModuleKeyOptCtx, token: u64) {
    if let Some((db, name)) = super::unlink::key_of(ctx) {
        let at = Instant::now();
        let name = name.to_vec();
        UNLINKED.set(Some(Unlinked {
            db,
            name,
            token,
            at,
        }));
    }
}

/// `expired` or `evicted`: if it is the gate just unlinked, it becomes a ghost.
extern "C" fn on_gone(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    let ok = raw::REDISMODULE_OK as c_int;
    let Some(gone) = UNLINKED.take() else {
        return ok; // any other key: nothing to do
    };
    let Some(db_of) = crate::api!(RedisModule_GetSelectedDb) else {
        return ok;
    };
    // SAFETY: the notification's context, selected on the key's database.
    let db = unsafe { db_of(ctx) };
    let name = redis_module::RedisString::string_as_slice(key);
    if gone.db != db || gone.name != name || gone.at.elapsed() > SAME_DELETION {
        return ok;
    }
    GHOSTS.with_borrow_mut(|ghosts| {
        let token = ghosts.entry(db).or_default().entry(gone.name).or_default();
        *token = (*token).max(gone.token);
    });
    schedule(Duration::ZERO);
    ok
}

/// The token of a gate that expired or was evicted under `name` in `db` and is not back yet.
pub fn ghost(db: i32, name: &[u8]) -> Option<u64> {
    GHOSTS.with_borrow(|ghosts| ghosts.get(&db)?.get(name).copied())
}

/// FLUSHDB (`db`) or FLUSHALL (-1): their gates are reset, ghosts included.
pub fn flushed(db: i32) {
    GHOSTS.with_borrow_mut(|ghosts| match db {
        -1 => ghosts.clear(),
        db => drop(ghosts.remove(&db)),
    });
}

/// SWAPDB: the ghosts go with their databases.
pub fn swapped(first: i32, second: i32) {
    GHOSTS.with_borrow_mut(|ghosts| {
        let (a, b) = (ghosts.remove(&first), ghosts.remove(&second));
        if let Some(a) = a {
            ghosts.insert(second, a);
        }
        if let Some(b) = b {
            ghosts.insert(first, b);
        }
    });
}

fn schedule(after: Duration) {
    if SCHEDULED.replace(true) {
        return;
    }
    match server::detached() {
        Some(ctx) => drop(ctx.create_timer(after, revive_all, ())),
        None => SCHEDULED.set(false),
    }
}

/// Stores every ghost again (a replica leaves that to its master, whose `RAISEGATE` follows).
fn revive_all(ctx: &Context, _: ()) {
    SCHEDULED.set(false);
    if server::writes_paused() {
        schedule(PAUSED_RETRY);
        return;
    }
    let ghosts = GHOSTS.take();
    if server::is_replica(ctx) {
        return;
    }
    let Some(revive) = REVIVE.get() else {
        return;
    };
    for (db, names) in ghosts {
        for (name, token) in names {
            revive(ctx, db, &name, token);
        }
    }
}
