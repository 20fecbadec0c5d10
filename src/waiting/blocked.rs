//! Parking a client (`RedisModule_BlockClient`) and answering it later. A parked client is
//! answered exactly once: every path that answers it first takes it out of its queue, and the
//! timeout and disconnect callbacks answer only clients still queued.
//!
//! The answer travels as the private data of `RedisModule_UnblockClient`; Redis hands it to the
//! reply callback in the same event-loop iteration, or to the timeout callback when the timeout
//! fired in between (then the grant is still answered, not dropped).

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;
use std::time::Instant;

use redis_module::{raw, Context, RedisError, RedisValue};

use crate::stats;

/// How a wait ended.
#[derive(Debug)]
pub enum Outcome {
    /// The lock was handed over with this token.
    Granted(u64),
    /// Withdrawn (RELEASE by the same owner, or the same owner asked again): nil.
    Withdrawn,
    /// Ended with an error (the node became a replica; the node cannot grant).
    Failed(String),
}

/// A parked client, as a queue keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parked {
    client: NonNull<raw::RedisModuleBlockedClient>,
    pub since: Instant,
}

impl Parked {
    /// Identifies the parked client in the callbacks.
    pub fn id(&self) -> usize {
        self.client.as_ptr() as usize
    }

    /// Answers the client: from the next reply callback (or a timeout callback racing it).
    pub fn answer(self, outcome: Outcome) {
        let Some(unblock) = crate::api!(RedisModule_UnblockClient) else {
            return;
        };
        let data = Box::into_raw(Box::new(outcome)).cast::<c_void>();
        // SAFETY: the handle came from RedisModule_BlockClient and was not answered before
        // (see the module docs); Redis owns `data` from here and frees it with `free_outcome`.
        unsafe { unblock(self.client.as_ptr(), data) };
    }

    /// Frees a handle whose client needs no answer (timed out, disconnected): Redis leaves
    /// that to the module for clients not blocked on keys.
    fn release_handle(self) {
        if let Some(unblock) = crate::api!(RedisModule_UnblockClient) {
            // SAFETY: the handle is live and was just taken out of its queue, so no other path
            // unblocks it.
            unsafe { unblock(self.client.as_ptr(), std::ptr::null_mut()) };
        }
    }
}

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
    Some(Parked {
        client,
        since: Instant::now(),
    })
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
    if let Some(parked) = super::queues::leave(handle as usize) {
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
    if let Some(parked) = super::queues::leave(client as usize) {
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
