//! Server happenings that end a wait or free a lock without a dlock command: DEL / UNLINK /
//! expiry / eviction of a key with waiters, FLUSHALL / FLUSHDB, and the node turning into a
//! replica (its waiters are answered `UNBLOCKED` at once, and wait on a master instead).

use std::os::raw::{c_char, c_int, c_void};
use std::time::Duration;

use redis_module::{raw, Context, RedisString};

use super::parked::Outcome;
use super::{handoff, queues};
use crate::keyspace::key::selected_db;
use crate::keyspace::moves;

/// The error a waiter gets when its node becomes a replica.
const DEMOTED: &str =
    "UNBLOCKED the node became a replica while the lock was awaited; wait on the master";

/// The classes of keyspace event that end a wait.
const WAIT_CLASSES: c_int = (raw::REDISMODULE_NOTIFY_GENERIC
    | raw::REDISMODULE_NOTIFY_EXPIRED
    | raw::REDISMODULE_NOTIFY_EVICTED) as c_int;

/// Subscribes to what ends waits, and to the keyspace events that move a lock; called once at
/// load. One subscription for both: Redis builds a context and a temporary client for every
/// subscriber of every event, so each subscription is a cost on every `DEL`, `EXPIRE` or
/// `SET ... PX` the server runs, lock or not.
pub fn watch(ctx: &Context) -> Result<(), &'static str> {
    let subscribe =
        crate::api!(RedisModule_SubscribeToKeyspaceEvents).ok_or("no keyspace events API")?;
    let classes = WAIT_CLASSES | moves::EVENT_CLASSES;
    // SAFETY: the module's load context; the callback is a static function.
    if unsafe { subscribe(ctx.ctx, classes, Some(on_key_event)) } != raw::REDISMODULE_OK as c_int {
        return Err("cannot subscribe to keyspace events");
    }
    for (id, callback) in [
        (raw::REDISMODULE_EVENT_FLUSHDB, on_flush as ServerEvent),
        (raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED, on_role),
    ] {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        if raw::subscribe_to_server_event(ctx.ctx, event, Some(callback)) != raw::Status::Ok {
            return Err("cannot subscribe to flush and role events");
        }
    }
    super::migration::watch(ctx)
}

type ServerEvent = extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

/// A keyspace event: a lock moved, restored, loaded or given another TTL is brought in line
/// (see [`moves`]); a key with waiters that was deleted, expired or evicted is handed off right
/// after this event (a notification callback must not write).
extern "C" fn on_key_event(
    ctx: *mut raw::RedisModuleCtx,
    kind: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if kind & moves::EVENT_CLASSES != 0 {
        moves::on_keyspace_event(ctx, event, key);
    }
    if kind & WAIT_CLASSES == 0 || queues::waiters() == 0 || key.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    let context = Context::new(ctx);
    let name = RedisString::string_as_slice(key).to_vec();
    let place = (selected_db(&context), name);
    if super::count(&place) > 0 {
        handoff::schedule(&context, &place, Duration::ZERO);
    }
    raw::REDISMODULE_OK as c_int
}

extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END {
        return;
    }
    let context = Context::new(ctx);
    for place in queues::keys_with_waiters() {
        handoff::schedule(&context, &place, Duration::ZERO);
    }
}

extern "C" fn on_role(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA {
        return;
    }
    let context = Context::new(ctx);
    let (waiters, timers) = queues::drain();
    for id in timers {
        let _ = context.stop_timer::<queues::QueueKey>(id);
    }
    for waiter in waiters {
        waiter.handle.answer(Outcome::Failed(DEMOTED.to_string()));
    }
}
