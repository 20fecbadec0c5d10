//! The clients `DLOCK.OBSERVE` blocked on a lock key, kept only where a deleted key would not
//! wake them: before Redis 7.2 (no `RedisModule_BlockClientOnKeysWithFlags` and its
//! `UNBLOCK_DELETED`), a client blocked on keys is served only while its key exists, and a
//! released plain lock takes its key with it. There, a change that leaves the key empty
//! ([`changed`], from [`super::notify`]) or a key that leaves the keyspace ([`left`], from
//! [`super::unlink`]: DEL, RENAME, a replica applying its master's release) ends the waits,
//! right after the command, with `CLIENT UNBLOCK ... TIMEOUT`, whose timeout callback replies
//! the state as it is then.
//!
//! Observers are named by client id, never by a blocked-client handle: ids are never reused, so
//! an entry left behind is harmless (its `CLIENT UNBLOCK` answers 0), and nothing here points
//! into Redis's memory.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::time::Duration;

use redis_module::{raw, Context};

use crate::server::selected_db;
use crate::wire::Arg;

type KeyName = (i32, Vec<u8>);

#[derive(Default)]
struct Registry {
    by_key: HashMap<KeyName, Vec<u64>>,
    by_client: HashMap<u64, KeyName>,
}

thread_local! {
    /// Only the main thread blocks clients and runs commands; never borrowed across a Redis call.
    static OBSERVERS: RefCell<Registry> = RefCell::default();
}

/// Whether this server needs the registry (see the module docs).
pub fn needed() -> bool {
    crate::api!(RedisModule_BlockClientOnKeysWithFlags).is_none()
}

fn client_id(ctx: &Context) -> u64 {
    // SAFETY: the context of a running command or blocked-client callback.
    crate::api!(RedisModule_GetClientId).map_or(0, |get| unsafe { get(ctx.ctx) })
}

/// The calling client was just blocked on `name`.
pub fn observing(ctx: &Context, name: &Arg) {
    let (id, key) = (client_id(ctx), (selected_db(ctx), name.as_bytes().to_vec()));
    if id == 0 {
        return;
    }
    OBSERVERS.with_borrow_mut(|r| {
        r.by_key.entry(key.clone()).or_default().push(id);
        r.by_client.insert(id, key);
    });
}

/// The calling client's wait ended (answered, timed out, disconnected).
pub fn done(ctx: &Context) {
    let id = client_id(ctx);
    OBSERVERS.with_borrow_mut(|r| {
        let Some(key) = r.by_client.remove(&id) else {
            return;
        };
        if let Some(ids) = r.by_key.get_mut(&key) {
            ids.retain(|&other| other != id);
            if ids.is_empty() {
                r.by_key.remove(&key);
            }
        }
    });
}

/// Takes the observers of a key out of the registry.
fn take(key: &KeyName) -> Vec<u64> {
    OBSERVERS.with_borrow_mut(|r| {
        let ids = r.by_key.remove(key).unwrap_or_default();
        for id in &ids {
            r.by_client.remove(id);
        }
        ids
    })
}

fn idle() -> bool {
    OBSERVERS.with_borrow(|r| r.by_key.is_empty())
}

/// A dlock write changed `name`: if it left the key empty, its observers are answered right
/// after the command (or the whole MULTI, or script: an observer never sees a state halfway
/// through one, such as the empty key between a RELEASE and another owner's ACQUIRE). While the
/// key exists, Redis serves them itself.
pub fn changed(ctx: &Context, name: &Arg) {
    if !idle() && !exists(ctx, name) {
        left(selected_db(ctx), name.as_bytes());
    }
}

fn exists(ctx: &Context, name: &Arg) -> bool {
    let (Some(open), Some(kind), Some(close)) = (
        crate::api!(RedisModule_OpenKey),
        crate::api!(RedisModule_KeyType),
        crate::api!(RedisModule_CloseKey),
    ) else {
        return true;
    };
    // SAFETY: a live context and key name; the key is closed before returning.
    unsafe {
        let key = open(ctx.ctx, name.as_ptr(), raw::REDISMODULE_READ as c_int);
        let empty = key.is_null() || kind(key) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int;
        close(key);
        !empty
    }
}

/// A lock key left the keyspace (DEL, RENAME, expiry...): its observers are answered right after
/// the command, on a timer (the unlink callback runs in the middle of a command and must not
/// call Redis back).
pub fn left(db: i32, name: &[u8]) {
    if idle() {
        return;
    }
    let key = (db, name.to_vec());
    if OBSERVERS.with_borrow(|r| r.by_key.contains_key(&key)) {
        if let Some(ctx) = crate::server::detached() {
            ctx.create_timer(
                Duration::ZERO,
                |ctx: &Context, key| unblock(ctx, take(&key)),
                key,
            );
        }
    }
}

/// FLUSHDB (`db`) or FLUSHALL (-1) emptied keys without unlinking them one by one: their
/// observers are answered right after (on a timer, as for [`left`]).
pub fn flushed(db: i32) {
    ended_in(|of| db == -1 || of == db);
}

/// SWAPDB: every key of both databases now names another resource; their observers are
/// answered right after.
pub fn swapped(first: i32, second: i32) {
    ended_in(|of| of == first || of == second);
}

fn ended_in(matches: impl Fn(i32) -> bool) {
    if idle() {
        return;
    }
    let ids: Vec<u64> = OBSERVERS.with_borrow_mut(|r| {
        let keys: Vec<KeyName> = r.by_key.keys().filter(|k| matches(k.0)).cloned().collect();
        let mut ids = Vec::new();
        for key in keys {
            for id in r.by_key.remove(&key).unwrap_or_default() {
                r.by_client.remove(&id);
                ids.push(id);
            }
        }
        ids
    });
    if let (false, Some(ctx)) = (ids.is_empty(), crate::server::detached()) {
        ctx.create_timer(Duration::ZERO, unblock, ids);
    }
}

/// `CLIENT UNBLOCK id TIMEOUT` for each: the timeout callback replies the key's state now.
fn unblock(ctx: &Context, ids: Vec<u64>) {
    for id in ids {
        // An id that is no longer blocked answers 0: nothing to do.
        let _ = ctx.call("CLIENT", &["UNBLOCK", &id.to_string(), "TIMEOUT"]);
    }
}
