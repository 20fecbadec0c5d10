//! Server happenings that end a wait or free a lock without a dlock command: DEL / UNLINK /
//! expiry / eviction / RENAME / an overwrite of a key with waiters (heard from the data types'
//! `unlink` callback, `keyspace::unlink`, not from keyspace events: a subscription would tax
//! every `DEL` and `SET ... PX` of the server), FLUSHALL / FLUSHDB, SWAPDB (heard by
//! `keyspace::moves`: the locks waited on were carried away, so each key's waiters are served by
//! what stands there now), and the node turning into a replica (its waiters are answered
//! `UNBLOCKED` at once, and wait on a master instead).

use std::os::raw::c_void;
use std::time::Duration;

use redis_module::{raw, Context};

use super::parked::Outcome;
use super::{handoff, queues};
use crate::keyspace::{ghosts, moves, observers, unlink};

/// The error a waiter gets when its node becomes a replica.
const DEMOTED: &str =
    "UNBLOCKED the node became a replica while the lock was awaited; wait on the master";

/// Listens for what ends waits; called once at load.
pub fn watch(ctx: &Context) -> Result<(), &'static str> {
    unlink::on_key_left(on_key_left);
    moves::on_swapped(on_swapped);
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

/// A lock key with waiters left the keyspace by a DEL, an expiry, an eviction, a RENAME or an
/// overwrite: its waiters are handed the lock on a timer, right after (the unlink callback runs
/// in the middle of the command and must not write).
fn on_key_left(db: i32, name: &[u8]) {
    if queues::waiters() == 0 {
        return;
    }
    let place = (db, name.to_vec());
    if queues::waiting(&place) > 0 {
        if let Some(ctx) = crate::server::detached() {
            handoff::schedule(&ctx, &place, Duration::ZERO);
        }
    }
}

/// SWAPDB of `first` and `second`: each key with waiters in them is handed to its waiters by
/// what stands there now (a lock carried in is never held there).
fn on_swapped(first: i32, second: i32) {
    let Some(ctx) = crate::server::detached() else {
        return;
    };
    for place in queues::keys_with_waiters() {
        if place.0 == first || place.0 == second {
            handoff::schedule(&ctx, &place, Duration::ZERO);
        }
    }
}

/// FLUSHDB / FLUSHALL: waiters are handed their keys, observers answered, gates gone for good
/// (their ghosts too: a flush is a reset).
extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END {
        return;
    }
    // SAFETY: Redis passes the flush info for the duration of the call.
    let db = unsafe { data.cast::<raw::RedisModuleFlushInfo>().as_ref() }.map_or(-1, |i| i.dbnum);
    ghosts::flushed(db);
    observers::flushed(db);
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
    // The module's one callback for this event (a second subscription would replace it).
    crate::replication::propagation::switch_on();
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
