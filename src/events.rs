//! Server events the module listens to.

use std::os::raw::c_void;
use std::time::Duration;

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
        id: raw::REDISMODULE_EVENT_FORK_CHILD,
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
/// the counter written next lands right after the new base. It is written from a 0 ms timer,
/// not from here: replicating inside this event would also propagate the command that forked
/// (BGSAVE, BGREWRITEAOF) to replicas and the AOF. The timer fires on the next event-loop turn,
/// long before the child can finish and its base file replace the old one.
extern "C" fn on_fork(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FORK_CHILD_BORN {
        return;
    }
    Context::new(ctx).create_timer(Duration::ZERO, write_counter, ());
}

fn write_counter(ctx: &Context, _: ()) {
    let counter = node().counter();
    if counter > 0 {
        effects::raise_counter(ctx, counter);
    }
}
