//! Whether anything can receive what the module replicates. `RedisModule_Replicate` builds
//! its argument objects and looks the command up even when Redis then drops the result (no AOF,
//! no replica, no backlog): about half of DLOCK.ACQUIRE's CPU on a standalone in-memory node.
//! So effects are built only when an AOF is on, or once replication has ever been possible on
//! this node — decided conservatively and never switched back off:
//! - a `SYNC`/`PSYNC` arrives (seen by a command filter *before* Redis handles it, so the
//!   replica's snapshot and the stream after it are complete),
//! - the node is or was a replica (its backlog can serve siblings after a promotion).

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use redis_module::{raw, Context};

static REPLICATION_POSSIBLE: AtomicBool = AtomicBool::new(false);

/// True when replicated effects can reach an AOF, a replica or a replication backlog.
pub fn needed(ctx: &Context) -> bool {
    REPLICATION_POSSIBLE.load(Relaxed)
        || (context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_AOF as c_int) != 0
}

fn context_flags(ctx: &Context) -> c_int {
    // Unknown (missing API): assume everything, so effects are always built.
    unsafe { raw::RedisModule_GetContextFlags }.map_or(!0, |flags| unsafe { flags(ctx.ctx) })
}

/// Installs the watchers; called once when the module loads.
pub fn watch(ctx: &Context) -> Result<(), &'static str> {
    if context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_SLAVE as c_int != 0 {
        REPLICATION_POSSIBLE.store(true, Relaxed);
    }
    let filter = unsafe { raw::RedisModule_RegisterCommandFilter }
        .map(|register| unsafe { register(ctx.ctx, Some(on_command), 0) });
    let role_event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        dataver: 1,
    };
    let subscribed = raw::subscribe_to_server_event(ctx.ctx, role_event, Some(on_role_change));
    match (filter, subscribed) {
        (Some(f), raw::Status::Ok) if !f.is_null() => Ok(()),
        _ => {
            // Cannot watch: always replicate.
            REPLICATION_POSSIBLE.store(true, Relaxed);
            Ok(())
        }
    }
}

/// Runs before every command Redis receives; must stay cheap.
extern "C" fn on_command(filter: *mut raw::RedisModuleCommandFilterCtx) {
    if REPLICATION_POSSIBLE.load(Relaxed) {
        return;
    }
    let Some(arg) = (unsafe { raw::RedisModule_CommandFilterArgGet }) else {
        return;
    };
    let name = unsafe { arg(filter, 0) };
    if name.is_null() {
        return;
    }
    let name = redis_module::RedisString::string_as_slice(name);
    if name.eq_ignore_ascii_case(b"psync") || name.eq_ignore_ascii_case(b"sync") {
        REPLICATION_POSSIBLE.store(true, Relaxed);
    }
}

extern "C" fn on_role_change(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    REPLICATION_POSSIBLE.store(true, Relaxed);
}
