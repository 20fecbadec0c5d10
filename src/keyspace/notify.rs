//! Telling Redis a lock key changed: `WATCH` is invalidated, a keyspace event of the module
//! class (`notify-keyspace-events` with `d`) named after the operation is sent, and the clients
//! blocked on the key (`DLOCK.OBSERVE`) look at it again.
//!
//! The module opts out of Redis's implicit signal on closing a key opened for writing
//! (`REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`), so that an ACQUIRE that found the lock
//! held by another owner, and changed nothing, leaves a client's WATCH intact.

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::{raw, Context};

use crate::wire::Arg;

/// Event names, one per kind of change.
pub const ACQUIRE: &CStr = c"dlock.acquire";
pub const RELEASE: &CStr = c"dlock.release";
pub const EXTEND: &CStr = c"dlock.extend";
pub const FENCE: &CStr = c"dlock.fence";
pub const FORCE_RELEASE: &CStr = c"dlock.forcerelease";
/// A tentative grant revoked for a smaller ticket.
pub const REVOKE: &CStr = c"dlock.revoke";
/// A plain lock given to a new owner (an election's new value), its lease unchanged.
pub const PROCLAIM: &CStr = c"dlock.proclaim";
/// A gate raised by a guarded write.
pub const GATE: &CStr = c"dlock.gate";

pub fn changed(ctx: &Context, key: &Arg, event: &CStr) {
    if let Some(signal) = crate::api!(RedisModule_SignalModifiedKey) {
        // SAFETY: a live command context and key name.
        unsafe { signal(ctx.ctx, key.as_ptr()) };
    }
    if let Some(notify) = crate::api!(RedisModule_NotifyKeyspaceEvent) {
        // SAFETY: as above, with a static event name.
        unsafe {
            notify(
                ctx.ctx,
                raw::REDISMODULE_NOTIFY_MODULE as c_int,
                event.as_ptr(),
                key.as_ptr(),
            )
        };
    }
    if let Some(ready) = crate::api!(RedisModule_SignalKeyAsReady) {
        // SAFETY: as above. Redis only queues the key, and only if a client is blocked on it,
        // so a change nobody observes costs one lookup.
        unsafe { ready(ctx.ctx, key.as_ptr()) };
    }
    super::observers::changed(ctx, key);
}

/// Valkey 9's `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (the bit means nothing on Redis,
/// so it is only set on Valkey).
const HANDLE_ATOMIC_SLOT_MIGRATION: u32 = 1 << 5;

/// Called once at load: opts out of the implicit WATCH signal, and declares that RDB loading
/// errors are handled (a malformed value fails its load instead of aborting the server) and
/// that a replica may load a full sync in the background (`repl-diskless-load swapdb`): loading
/// only ever raises the node counter, which is safe even for a load that is then discarded.
/// On Valkey 9+ it also opts into atomic slot migration (`CLUSTER MIGRATESLOTS`): keys that
/// arrive before the slot is ours only raise the counter, and the waiters of a slot that left
/// are redirected (`waiting::migration`).
pub fn set_module_options(ctx: &Context) {
    if let Some(set) = crate::api!(RedisModule_SetModuleOptions) {
        let mut options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED
            | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD;
        if crate::server::slot_migration(ctx) == crate::server::SlotMigration::Valkey {
            options |= HANDLE_ATOMIC_SLOT_MIGRATION;
        }
        // SAFETY: the load context.
        unsafe { set(ctx.ctx, options as c_int) };
    }
}
