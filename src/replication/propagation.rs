//! Whether anything can receive what the module replicates. `RedisModule_Replicate` builds its
//! argument objects and looks the command up even when Redis then drops the result (no AOF, no
//! replica, no backlog): about half of DLOCK.ACQUIRE's CPU on a standalone in-memory node. So
//! effects are built only when an AOF is on, or once replication is or was possible on this node
//! — decided conservatively, and never switched back off:
//!
//! - on first use after the server finished loading (and the module was loaded), the server
//!   is asked whether a replication backlog exists, replicas are attached, or it is a replica:
//!   a master restarted from an RDB restores its backlog, and a module loaded at runtime may
//!   join a master that already has replicas;
//! - the server forks while a replica is attached (a full sync: Redis created the backlog and
//!   listed the replica before forking, and the replica's stream starts at the fork, so every
//!   write after it reaches the replica and every write before it is in the snapshot). A command
//!   filter watching for `SYNC` would see it earlier but costs every command the server runs.
//! - the node changes role, or a replica comes online;
//! - an atomic slot migration starts here (Redis 8.4+, Valkey 9+): its target receives the
//!   slot's writes after the snapshot through the same stream, so a grant made during the
//!   migration without its effect would never reach the new owner (`waiting::migration`).

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use redis_module::{raw, Context};

use crate::server;

static POSSIBLE: AtomicBool = AtomicBool::new(false);
/// The server was asked once, after loading (until then the answer could still change).
static ASKED: AtomicBool = AtomicBool::new(false);

/// True when replicated effects can reach an AOF, a replica or a replication backlog
/// (`flags`: the context's).
pub fn needed(ctx: &Context, flags: c_int) -> bool {
    server::flag(flags, raw::REDISMODULE_CTX_FLAGS_AOF) || possible(ctx)
}

fn possible(ctx: &Context) -> bool {
    if POSSIBLE.load(Relaxed) {
        return true;
    }
    if !ASKED.load(Relaxed) && !server::is_loading() {
        ASKED.store(true, Relaxed);
        if server_replicates(ctx) {
            POSSIBLE.store(true, Relaxed);
        }
    }
    POSSIBLE.load(Relaxed)
}

/// `INFO replication`: a backlog, attached replicas, or the replica role.
fn server_replicates(ctx: &Context) -> bool {
    let (Some(get), Some(field), Some(free)) = (
        crate::api!(RedisModule_GetServerInfo),
        crate::api!(RedisModule_ServerInfoGetFieldSigned),
        crate::api!(RedisModule_FreeServerInfo),
    ) else {
        return true; // cannot tell: replicate
    };
    // SAFETY: a live context; the info is freed below and the field names are static.
    unsafe {
        let info = get(ctx.ctx, c"replication".as_ptr());
        if info.is_null() {
            return true;
        }
        let signed = |name: &CStr| field(info, name.as_ptr(), std::ptr::null_mut());
        let replicates = signed(c"repl_backlog_active") != 0 || signed(c"connected_slaves") != 0;
        free(ctx.ctx, info);
        replicates
            || server::flag(
                server::context_flags(ctx.ctx),
                raw::REDISMODULE_CTX_FLAGS_SLAVE,
            )
    }
}

/// Something will receive effects from now on (a slot migration started, the node changed
/// role): build them.
pub fn switch_on() {
    POSSIBLE.store(true, Relaxed);
}

/// The server forked (`super::fork`): a replica's full sync starts if one is attached.
pub fn forked(ctx: &Context) {
    if !POSSIBLE.load(Relaxed) && server_replicates(ctx) {
        POSSIBLE.store(true, Relaxed);
    }
}

/// Installs the watchers; called once when the module loads. A role change is heard by
/// `waiting::events` (a module has one callback per server event), which calls [`switch_on`].
pub fn watch(ctx: &Context) {
    if !subscribe(ctx, raw::REDISMODULE_EVENT_REPLICA_CHANGE) {
        POSSIBLE.store(true, Relaxed); // cannot watch: always replicate
    }
}

fn subscribe(ctx: &Context, id: u64) -> bool {
    let event = raw::RedisModuleEvent { id, dataver: 1 };
    raw::subscribe_to_server_event(ctx.ctx, event, Some(on_event)) == raw::Status::Ok
}

extern "C" fn on_event(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _sub: u64,
    _data: *mut c_void,
) {
    POSSIBLE.store(true, Relaxed);
}
