//! What reaches replicas and the AOF: the *effect* of a command, with the absolute deadline and
//! the token chosen on this node, so a replica or an AOF replay never re-runs time- or
//! counter-dependent logic. Every write is one `DLOCK.APPLY` per holder it changed (for a plain
//! lock, the whole resource), or one `DEL`.
//!
//! `RedisModule_Replicate` is called with a format string, only when something can receive it
//! ([`super::propagation`]), and with as few new strings as possible: the key and the owner are
//! the command's own argument strings, `PXAT` one string kept for the process, and the integers
//! are formatted on the stack with `itoa` (a `b` argument is one allocation; an `l` argument is
//! two).

use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use redis_module::{raw, Context, RedisString};

use crate::keyspace::callbacks::emit_holder_apply;
use crate::keyspace::compact::Record;
use crate::keyspace::table::Slot;
use crate::server;
use crate::wire::Arg;

type ReplicateFn =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, *const c_char, *const c_char, ...) -> c_int;

/// `RedisModule_Replicate`, or `None` when nothing could receive the effect (`flags`: the
/// context's).
fn replicate(ctx: &Context, flags: c_int) -> Option<ReplicateFn> {
    if !super::propagation::needed(ctx, flags) {
        return None;
    }
    crate::api!(RedisModule_Replicate)
}

/// `DLOCK.APPLY key owner token holds PXAT deadline`: the resource is this plain lock.
/// `owner_arg` is the command's owner argument, passed on as is when it holds `record.owner`
/// (a fresh string is made otherwise).
pub fn apply(ctx: &Context, key: &Arg, owner_arg: Option<&Arg>, record: &Record<'_>) {
    let flags = server::context_flags(ctx.ctx);
    apply_flagged(ctx, flags, key, owner_arg, record);
}

/// [`apply`], for a caller that already read the context's flags.
pub fn apply_flagged(
    ctx: &Context,
    flags: c_int,
    key: &Arg,
    owner_arg: Option<&Arg>,
    record: &Record<'_>,
) {
    let Some(replicate) = replicate(ctx, flags) else {
        return;
    };
    let made_owner;
    let owner = match owner_arg.filter(|arg| arg.as_bytes() == record.owner) {
        Some(arg) => arg.as_ptr(),
        None => {
            made_owner = RedisString::create_from_slice(ctx.ctx, record.owner);
            made_owner.inner
        }
    };
    let (token, holds, deadline) = record.apply_args();
    let [mut token_buf, mut holds_buf, mut deadline_buf] = [(); 3].map(|_| itoa::Buffer::new());
    let numbers = [
        token_buf.format(token).as_bytes(),
        holds_buf.format(holds).as_bytes(),
    ];
    let made_pxat;
    let pxat = match kept_pxat() {
        Some(pxat) => pxat,
        None => {
            made_pxat = RedisString::create_from_slice(ctx.ctx, b"PXAT");
            made_pxat.inner
        }
    };
    let deadline = deadline_buf.format(deadline).as_bytes();
    let strings = [key.as_ptr(), owner, pxat];
    // SAFETY: a live command or timer context; the key, the owner and `PXAT` (kept for the
    // process, or made above) outlive the call.
    unsafe { send_apply(ctx, replicate, strings, [numbers[0], numbers[1], deadline]) };
}

/// `DLOCK.APPLY key owner token holds PXAT deadline` with `strings` (key, owner, `PXAT`) and
/// `numbers` (token, holds, deadline).
///
/// # Safety
/// `ctx` must be a live context and the strings live strings.
unsafe fn send_apply(
    ctx: &Context,
    replicate: ReplicateFn,
    [key, owner, pxat]: [*mut raw::RedisModuleString; 3],
    [token, holds, deadline]: [&[u8]; 3],
) {
    let (t, h, d) = (token.as_ptr(), holds.as_ptr(), deadline.as_ptr());
    // SAFETY: the format matches the arguments (s: a string, b: pointer and length); the
    // caller's promise covers the context and the strings.
    unsafe {
        replicate(
            ctx.ctx,
            c"DLOCK.APPLY".as_ptr(),
            c"ssbbsb".as_ptr(),
            key,
            owner,
            t,
            token.len(),
            h,
            holds.len(),
            pxat,
            d,
            deadline.len(),
        )
    };
}

/// The string `PXAT`, made on first use and never freed: Redis only takes references to it
/// for the effects it propagates (and drops them), so one string serves every effect.
fn kept_pxat() -> Option<*mut raw::RedisModuleString> {
    static PXAT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    let kept = PXAT.load(Relaxed);
    if !kept.is_null() {
        return Some(kept);
    }
    let create = crate::api!(RedisModule_CreateString)?;
    // SAFETY: a null context is allowed (the string is then not auto-freed with any context);
    // the bytes are static.
    let made = unsafe { create(ptr::null_mut(), c"PXAT".as_ptr(), 4) };
    if made.is_null() {
        return None;
    }
    PXAT.store(made, Relaxed);
    Some(made)
}

/// `DLOCK.APPLY key owner token holds PXAT deadline MODE`: one holder of a table set as given
/// (`holds` 0: removed), the mode last (`EXCLUSIVE`, `SHARED` or `LIMIT k`).
pub fn apply_holder(ctx: &Context, key: &Arg, holder: &Slot, holds: u16, limit: u32) {
    let Some(replicate) = replicate(ctx, server::context_flags(ctx.ctx)) else {
        return;
    };
    // SAFETY: a live command or timer context and the command's key string.
    unsafe {
        emit_holder_apply!(
            replicate,
            ctx.ctx,
            key.as_ptr(),
            holder,
            c_longlong::from(holds),
            limit
        )
    };
}

/// `DEL key`.
pub fn delete(ctx: &Context, key: &Arg) {
    if let Some(replicate) = replicate(ctx, server::context_flags(ctx.ctx)) {
        // SAFETY: a live context; `s` is the key.
        unsafe { replicate(ctx.ctx, c"DEL".as_ptr(), c"s".as_ptr(), key.as_ptr()) };
    }
}

/// `DLOCK.RAISEGATE gate token`: a gate's rise, with the write it let through.
pub fn raise_gate(ctx: &Context, gate: &Arg, token: u64) {
    if let Some(replicate) = replicate(ctx, server::context_flags(ctx.ctx)) {
        let token = c_longlong::try_from(token).unwrap_or(c_longlong::MAX);
        let format = c"sl".as_ptr();
        // SAFETY: a live context; `s` is the gate's key, `l` the token.
        unsafe {
            replicate(
                ctx.ctx,
                c"DLOCK.RAISEGATE".as_ptr(),
                format,
                gate.as_ptr(),
                token,
            )
        };
    }
}

/// `DLOCK.RAISE counter`: carries the node counter to replicas and into the AOF.
pub fn raise(ctx: &Context, counter: u64) {
    if let Some(replicate) = replicate(ctx, server::context_flags(ctx.ctx)) {
        let counter = c_longlong::try_from(counter).unwrap_or(c_longlong::MAX);
        // SAFETY: a live context; `l` is the counter.
        unsafe { replicate(ctx.ctx, c"DLOCK.RAISE".as_ptr(), c"l".as_ptr(), counter) };
    }
}
