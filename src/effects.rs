//! What reaches replicas and the AOF: the *effect* of a command, with absolute expiry and the
//! token chosen on this node, so a replica or an AOF replay never re-runs time- or
//! counter-dependent logic.
//!
//! Calls `RedisModule_Replicate` with a format string directly (no argument vectors or
//! temporary strings), and only when something can receive it (see propagation.rs).

use std::os::raw::c_longlong;

use redis_module::{raw, Context};

use crate::argv::Arg;

use crate::store::StoredLock;

type ReplicateFn = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *const std::os::raw::c_char,
    *const std::os::raw::c_char,
    ...
) -> std::os::raw::c_int;

/// `RedisModule_Replicate`, or `None` when nothing could receive the effect.
fn replicate(ctx: &Context) -> Option<ReplicateFn> {
    if !crate::propagation::needed(ctx) {
        return None;
    }
    // Set by Redis when the module loads, before any command can run.
    unsafe { raw::RedisModule_Replicate }
}

/// `DLOCK.APPLY key owner token holds [PXAT unix-ms]` (without PXAT the expiry is kept).
pub fn store(ctx: &Context, key: &Arg, lock: StoredLock, expire_at: Option<u64>) {
    let Some(replicate) = replicate(ctx) else {
        return;
    };
    let owner = lock.owner();
    let (token, holds) = (lock.token() as c_longlong, c_longlong::from(lock.holds()));
    unsafe {
        match expire_at {
            Some(at) => replicate(
                ctx.ctx,
                c"DLOCK.APPLY".as_ptr(),
                c"sbllcl".as_ptr(),
                key.as_ptr(),
                owner.as_ptr(),
                owner.len(),
                token,
                holds,
                c"PXAT".as_ptr(),
                at as c_longlong,
            ),
            None => replicate(
                ctx.ctx,
                c"DLOCK.APPLY".as_ptr(),
                c"sbll".as_ptr(),
                key.as_ptr(),
                owner.as_ptr(),
                owner.len(),
                token,
                holds,
            ),
        };
    }
}

/// `PEXPIREAT key unix-ms`.
pub fn expire_at(ctx: &Context, key: &Arg, unix_ms: u64) {
    let Some(replicate) = replicate(ctx) else {
        return;
    };
    unsafe {
        replicate(
            ctx.ctx,
            c"PEXPIREAT".as_ptr(),
            c"sl".as_ptr(),
            key.as_ptr(),
            unix_ms as c_longlong,
        )
    };
}

/// `DEL key`.
pub fn delete(ctx: &Context, key: &Arg) {
    let Some(replicate) = replicate(ctx) else {
        return;
    };
    unsafe { replicate(ctx.ctx, c"DEL".as_ptr(), c"s".as_ptr(), key.as_ptr()) };
}

/// `DLOCK.RAISE counter`: carries the node counter to replicas and into the AOF.
pub fn raise_counter(ctx: &Context, counter: u64) {
    let Some(replicate) = replicate(ctx) else {
        return;
    };
    unsafe {
        replicate(
            ctx.ctx,
            c"DLOCK.RAISE".as_ptr(),
            c"l".as_ptr(),
            counter as c_longlong,
        )
    };
}
