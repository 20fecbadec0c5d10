//! Server events the module listens to.

use std::os::raw::c_void;

use redis_module::{raw, Context, NotifyEvent};

use crate::node::node;
use crate::{effects, types};

/// `expired` keyspace events: counts locks that expired before their owner released them.
pub fn on_keyspace_event(_ctx: &Context, _event: NotifyEvent, event: &str, key: &[u8]) {
    if event == "expired" {
        types::on_key_expired(key);
    }
}

/// Subscribes to fork events (see [`on_fork`]).
pub fn subscribe(ctx: &Context) -> Result<(), &'static str> {
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FORK_CHILD as u64,
        dataver: 1,
    };
    match raw::subscribe_to_server_event(ctx.ctx, event, Some(on_fork)) {
        raw::Status::Ok => Ok(()),
        raw::Status::Err => Err("cannot subscribe to fork events"),
    }
}

/// A child was forked (AOF rewrite, BGSAVE, full sync). An AOF rewrite in plain-AOF mode
/// (`aof-use-rdb-preamble no`) writes a base file from the keyspace only, so a counter whose
/// locks are all gone would be lost. Redis opened the new incremental AOF before forking, so
/// writing the counter now puts it right after the new base.
extern "C" fn on_fork(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FORK_CHILD_BORN as u64 {
        return;
    }
    let counter = node().counter();
    if counter > 0 {
        effects::raise_counter(&Context::new(ctx), counter);
    }
}
