//! Gates that are evicted come back. A gate is the memory of the highest token its data was
//! written under: if it vanished, the next GUARD would find no gate and let any token through —
//! a stale writer's included. `DEL` / `UNLINK` and the flushes are the deliberate reset; an
//! eviction under an `allkeys-*` policy is not, so such a gate is put back at the token it had.
//! (A gate never keeps a TTL, [`super::gate_watch`]; one that expires all the same — a TTL
//! loaded from an older release's file — comes back the same way.)
//!
//! How it is heard: a gate's `unlink` callback notes the gate leaving its key (it cannot tell
//! why); the next keyspace notification the module gets is the `evicted` (or `expired`) one of
//! that very key if that is why, sent by Redis in the same call — any other notification, a
//! `del` first of all, ends the note. The gate is then a *ghost*: readers (GUARD, CHECK,
//! RAISEGATE) see it in place of the empty key, and a timer stores it again right after the
//! command, replicated and written to the AOF as `DLOCK.RAISEGATE` after the eviction's `DEL`
//! (storing from the notification itself is not allowed on Redis 7.2+, and on 7.0 its effect
//! would reach replicas before that `DEL`). A `DEL` of the key forgets its ghost.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use redis_module::{raw, Context};

use crate::server;

/// How often the timer looks again while writes are paused (CLIENT PAUSE, a failover): a write
/// replicated then would abort the server.
const PAUSED_RETRY: Duration = Duration::from_millis(10);

/// The gate last unlinked other than by a dlock command: its database, name and token.
type Unlinked = (i32, Vec<u8>, u64);

/// Ghosts by database, then key name: the token each gate had.
type Ghosts = HashMap<i32, HashMap<Vec<u8>, u64>>;

thread_local! {
    /// Only the main thread unlinks keys and runs notifications.
    static UNLINKED: RefCell<Option<Unlinked>> = const { RefCell::new(None) };
    static GHOSTS: RefCell<Ghosts> = RefCell::default();
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// What stores a ghost again: installed at load by the layer that replicates (the command
/// layer's gate writer), so that this layer does not depend on it.
static REVIVE: OnceLock<Revive> = OnceLock::new();

/// Stores the gate of database, key name and token again.
pub type Revive = fn(&Context, i32, &[u8], u64);

/// Installs how a ghost is stored again; once, at load.
pub fn revive_with(revive: Revive) {
    let _ = REVIVE.set(revive);
}

/// A gate with `token` is leaving the key of `ctx` (the data type's unlink callback).
pub fn unlinked(ctx: *mut raw::RedisModuleKeyOptCtx, token: u64) {
    if let Some((db, name)) = super::unlink::key_of(ctx) {
        let name = name.to_vec();
        UNLINKED.set(Some((db, name, token)));
    }
}

/// Takes the note of the last gate unlinked: every notification ends it.
pub fn take_unlinked() -> Option<Unlinked> {
    UNLINKED.take()
}

/// `evicted` or `expired` of `name` in `db`: if it is the gate just unlinked (`noted`), it
/// becomes a ghost, stored again right after.
pub fn gone(db: i32, name: &[u8], noted: Option<Unlinked>) {
    let Some((noted_db, noted_name, token)) = noted else {
        return; // any other key: nothing to do
    };
    if noted_db != db || noted_name != name {
        return;
    }
    GHOSTS.with_borrow_mut(|ghosts| {
        let ghost = ghosts.entry(db).or_default().entry(noted_name).or_default();
        *ghost = (*ghost).max(token);
    });
    schedule(Duration::ZERO);
}

/// A `DEL` of `name` in `db`: the reset, ghost included.
pub fn forget(db: i32, name: &[u8]) {
    GHOSTS.with_borrow_mut(|ghosts| {
        if let Some(names) = ghosts.get_mut(&db) {
            names.remove(name);
        }
    });
}

/// The token of a gate evicted (or expired) under `name` in `db` and not back yet.
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
