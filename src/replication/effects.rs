//! What reaches replicas and the AOF: the *effect* of a command, with the absolute deadline and
//! the token chosen on this node, so a replica or an AOF replay never re-runs time- or
//! counter-dependent logic. Every lock write is one `DLOCK.APPLY` (the whole lock) or one `DEL`.
//!
//! `RedisModule_Replicate` is called with a format string (no argument vectors or temporary
//! strings), and only when something can receive it ([`super::propagation`]).

use std::os::raw::{c_char, c_int, c_longlong};

use redis_module::{raw, Context};

use crate::commands::Arg;
use crate::keyspace::value::Record;
use crate::keyspace::FOLLOW_KEY_TTL;

type ReplicateFn =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, *const c_char, *const c_char, ...) -> c_int;

/// `RedisModule_Replicate`, or `None` when nothing could receive the effect.
fn replicate(ctx: &Context) -> Option<ReplicateFn> {
    if !super::propagation::needed(ctx) {
        return None;
    }
    crate::api!(RedisModule_Replicate)
}

/// Token, holds and deadline as the `l` arguments of a replicated command.
pub fn apply_args(record: &Record<'_>) -> (c_longlong, c_longlong, c_longlong) {
    let int = |v: u64| c_longlong::try_from(v).unwrap_or(c_longlong::MAX);
    (
        int(record.token),
        c_longlong::from(record.holds),
        int(record.deadline_ms),
    )
}

/// `DLOCK.APPLY key owner token holds PXAT deadline` (without PXAT for a version-1 lock whose
/// deadline is its key's TTL).
pub fn apply(ctx: &Context, key: &Arg, record: &Record<'_>) {
    let Some(replicate) = replicate(ctx) else {
        return;
    };
    let (token, holds, deadline) = apply_args(record);
    let owner = record.owner;
    // SAFETY: a live command or timer context; the format matches the arguments:
    // s = key, b = owner pointer + length, l = integers, c = C string.
    unsafe {
        if record.deadline_ms == FOLLOW_KEY_TTL {
            replicate(
                ctx.ctx,
                c"DLOCK.APPLY".as_ptr(),
                c"sbll".as_ptr(),
                key.as_ptr(),
                owner.as_ptr(),
                owner.len(),
                token,
                holds,
            );
        } else {
            let pxat = c"PXAT".as_ptr();
            replicate(
                ctx.ctx,
                c"DLOCK.APPLY".as_ptr(),
                c"sbllcl".as_ptr(),
                key.as_ptr(),
                owner.as_ptr(),
                owner.len(),
                token,
                holds,
                pxat,
                deadline,
            );
        }
    }
}

/// `DEL key`.
pub fn delete(ctx: &Context, key: &Arg) {
    if let Some(replicate) = replicate(ctx) {
        // SAFETY: a live context; `s` is the key.
        unsafe { replicate(ctx.ctx, c"DEL".as_ptr(), c"s".as_ptr(), key.as_ptr()) };
    }
}

/// `DLOCK.RAISE counter`: carries the node counter to replicas and into the AOF.
pub fn raise(ctx: &Context, counter: u64) {
    if let Some(replicate) = replicate(ctx) {
        let counter = c_longlong::try_from(counter).unwrap_or(c_longlong::MAX);
        // SAFETY: a live context; `l` is the counter.
        unsafe { replicate(ctx.ctx, c"DLOCK.RAISE".as_ptr(), c"l".as_ptr(), counter) };
    }
}
