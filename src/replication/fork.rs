//! The fencing counter written right after every fork (and, through [`super::propagation`], a
//! replica's full sync noticed). An AOF rewrite in plain-AOF mode
//! (`aof-use-rdb-preamble no`) writes its base from the keyspace only, so a counter whose locks
//! are all gone would be lost; Redis opened the new incremental AOF before forking, so a
//! `DLOCK.RAISE` written any time after the fork lands after the new base.
//!
//! It is written from a timer, not from the fork event (replicating there would also propagate
//! the command that forked), and never while writes are paused: CLIENT PAUSE, SHUTDOWN and
//! FAILOVER pause them while forking for replicas, and a module replicating then aborts the
//! server. The timer retries until writes flow again; what it writes lands after the new base
//! whenever it runs, as long as it runs before the next rewrite forks.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use redis_module::{raw, Context};

use crate::node::node;
use crate::server;

/// How often a write waiting for a pause to end tries again.
const PAUSED_RETRY: Duration = Duration::from_millis(10);

/// A write is scheduled (one is enough however many forks happen meanwhile).
static PENDING: AtomicBool = AtomicBool::new(false);

/// Subscribes to fork events; called once at load.
pub fn watch(ctx: &Context) -> Result<(), &'static str> {
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FORK_CHILD,
        dataver: 1,
    };
    match raw::subscribe_to_server_event(ctx.ctx, event, Some(on_fork)) {
        raw::Status::Ok => Ok(()),
        raw::Status::Err => Err("cannot subscribe to fork events"),
    }
}

extern "C" fn on_fork(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FORK_CHILD_BORN {
        return;
    }
    let ctx = Context::new(ctx);
    super::propagation::forked(&ctx);
    if !PENDING.swap(true, Relaxed) {
        ctx.create_timer(Duration::ZERO, write_counter, ());
    }
}

fn write_counter(ctx: &Context, _: ()) {
    if server::writes_paused() {
        ctx.create_timer(PAUSED_RETRY, write_counter, ());
        return;
    }
    PENDING.store(false, Relaxed);
    let counter = node().counter();
    if counter > 0 {
        super::effects::raise(ctx, counter);
    }
}
