//! Parking a client (`RedisModule_BlockClient`) and answering it later. A parked client is
//! answered exactly once: every path that answers it first takes it out of its queue, and the
//! timeout and disconnect callbacks answer only clients still queued.
//!
//! The answer travels as the private data of `RedisModule_UnblockClient`; Redis hands it to the
//! reply callback in the same event-loop iteration, or to the timeout callback when the timeout
//! fired in between (then the grant is still answered, not dropped).

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use redis_module::{raw, Context, RedisError, RedisValue};

use super::parked::{parked_now, Outcome, Parked};
use super::queues;
use crate::stats;

/// Parks the calling client for up to `timeout_ms` (0: no limit); `None` if this server cannot.
pub fn park(ctx: &Context, timeout_ms: u64) -> Option<Parked> {
    let block = crate::api!(RedisModule_BlockClient)?;
    let timeout = i64::try_from(timeout_ms).unwrap_or(i64::MAX);
    // SAFETY: the context of the running command; the callbacks are `extern "C"` functions
    // with the signatures Redis expects, valid for the module's lifetime.
    let client = unsafe {
        block(
            ctx.ctx,
            Some(on_reply),
            Some(on_timeout),
            Some(free_outcome),
            timeout,
        )
    };
    let client = NonNull::new(client)?;
    if let Some(set) = crate::api!(RedisModule_SetDisconnectCallback) {
        // SAFETY: a live blocked-client handle; the callback lives as long as the module.
        unsafe { set(client.as_ptr(), Some(on_disconnect)) };
    }
    Some(parked_now(client))
}

/// The outcome a blocked-client callback was given, if any.
fn outcome<'a>(ctx: *mut raw::RedisModuleCtx) -> Option<&'a Outcome> {
    let get = crate::api!(RedisModule_GetBlockedClientPrivateData)?;
    // SAFETY: a blocked-client callback context; the data, when set, is a Box<Outcome> from
    // `Parked::answer`, freed by Redis only after this callback returns.
    unsafe { get(ctx).cast::<Outcome>().as_ref() }
}

fn reply(ctx: &Context, outcome: Option<&Outcome>) -> c_int {
    let reply = match outcome {
        Some(Outcome::Granted(token)) => Ok(RedisValue::Integer(
            i64::try_from(*token).unwrap_or(i64::MAX),
        )),
        Some(Outcome::Failed(message)) => Err(RedisError::String(message.clone())),
        Some(Outcome::Withdrawn) | None => Ok(RedisValue::Null),
    };
    ctx.reply(reply) as c_int
}

extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    reply(&Context::new(ctx), outcome(ctx))
}

/// The wait timed out: leave the queue and answer nil, unless a grant got there first.
extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    if let Some(answered) = outcome(ctx) {
        return reply(&Context::new(ctx), Some(answered));
    }
    // SAFETY: the timeout callback's context carries its blocked client.
    let handle = crate::api!(RedisModule_GetBlockedClientHandle)
        .map_or(std::ptr::null_mut(), |get| unsafe { get(ctx) });
    if let Some(parked) = queues::leave(handle as usize) {
        stats::count(&stats::WAIT_TIMEOUTS);
        parked.release_handle();
    }
    reply(&Context::new(ctx), None)
}

/// The client went away while queued: leave the queue, free the handle.
extern "C" fn on_disconnect(
    _ctx: *mut raw::RedisModuleCtx,
    client: *mut raw::RedisModuleBlockedClient,
) {
    if let Some(parked) = queues::leave(client as usize) {
        parked.release_handle();
    }
}

extern "C" fn free_outcome(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: non-null private data is always a Box<Outcome> from `Parked::answer`, and
        // Redis frees it exactly once.
        drop(unsafe { Box::from_raw(data.cast::<Outcome>()) });
    }
}
