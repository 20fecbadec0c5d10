//! What reaches replicas and the AOF: the *effect* of a command, with the absolute deadline and
//! the token chosen on this node, so a replica or an AOF replay never re-runs time- or
//! counter-dependent logic. Every write is one `DLOCK.APPLY` per holder it changed (or, for a
//! grant or a PROCLAIM that leaves one exclusive holder, the whole resource), or one `DEL`.
//!
//! `RedisModule_Replicate` is called with a format string, only when something can receive it
//! ([`super::propagation`]), and with as few new strings as possible: the key and the owner are
//! the command's own argument strings, `PXAT` one string kept for the process, and the integers
//! are formatted on the stack with `itoa` (a `b` argument is one allocation; an `l` argument is
//! two).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use redis_module::{raw, Context, RedisString};

use dlock_core::Mode;

use crate::keyspace::holder::mode_word;
use crate::keyspace::Lease;
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

/// One holder's change, as replicas and the AOF apply it.
pub struct Apply<'a> {
    pub owner: &'a [u8],
    /// The command's owner argument, passed on as is when it holds `owner` (a fresh string is
    /// made otherwise).
    pub owner_arg: Option<&'a Arg>,
    /// The holder's lease now; `holds` 0 removes it.
    pub lease: Lease,
    pub scope: Scope,
}

/// What a `DLOCK.APPLY` sets.
#[derive(Clone, Copy)]
pub enum Scope {
    /// The whole resource: this one exclusive holder, whatever the key held (no mode word).
    Sole,
    /// One holder of the resource in `mode`, beside the others (a semaphore's `limit`, else 0).
    Holder { mode: Mode, limit: u32 },
}

/// `DLOCK.APPLY key owner token holds PXAT deadline [MODE]`: the effect of one holder's change
/// (`flags`: the context's, read once by the caller).
pub fn apply(ctx: &Context, flags: c_int, key: &Arg, change: &Apply<'_>) {
    let Some(replicate) = replicate(ctx, flags) else {
        return;
    };
    let made_owner;
    let owner = match change
        .owner_arg
        .filter(|arg| arg.as_bytes() == change.owner)
    {
        Some(arg) => arg.as_ptr(),
        None => {
            made_owner = RedisString::create_from_slice(ctx.ctx, change.owner);
            made_owner.inner
        }
    };
    let made_pxat;
    let pxat = match kept_pxat() {
        Some(pxat) => pxat,
        None => {
            made_pxat = RedisString::create_from_slice(ctx.ctx, b"PXAT");
            made_pxat.inner
        }
    };
    let int = |v: u64| c_longlong::try_from(v).unwrap_or(c_longlong::MAX);
    let lease = change.lease;
    let mut bufs = [(); 4].map(|_| itoa::Buffer::new());
    let [token_buf, holds_buf, deadline_buf, limit_buf] = &mut bufs;
    let numbers = [
        token_buf.format(int(lease.token)).as_bytes(),
        holds_buf.format(lease.holds).as_bytes(),
        deadline_buf.format(int(lease.deadline_ms)).as_bytes(),
    ];
    let mode = match change.scope {
        Scope::Sole => None,
        Scope::Holder { mode, limit } => {
            let limit = (mode == Mode::Permit).then(|| limit_buf.format(limit).as_bytes());
            Some((mode_word(mode), limit))
        }
    };
    // SAFETY: a live command or timer context; the key, the owner and `PXAT` (kept for the
    // process, or made above) outlive the call.
    unsafe { send_apply(ctx, replicate, [key.as_ptr(), owner, pxat], numbers, mode) };
}

/// `DLOCK.APPLY key owner token holds PXAT deadline [MODE [limit]]` with `strings` (key,
/// owner, `PXAT`) and `numbers` (token, holds, deadline).
///
/// # Safety
/// `ctx` must be a live context and the strings live strings.
unsafe fn send_apply(
    ctx: &Context,
    replicate: ReplicateFn,
    [key, owner, pxat]: [*mut raw::RedisModuleString; 3],
    [token, holds, deadline]: [&[u8]; 3],
    mode: Option<(&CStr, Option<&[u8]>)>,
) {
    let name = c"DLOCK.APPLY".as_ptr();
    let (t, h, d) = (token.as_ptr(), holds.as_ptr(), deadline.as_ptr());
    let (tl, hl, dl) = (token.len(), holds.len(), deadline.len());
    // SAFETY: each format matches its arguments (s: a string, b: pointer and length, c: a
    // static C string); the caller's promise covers the context and the strings.
    unsafe {
        match mode {
            None => replicate(
                ctx.ctx,
                name,
                c"ssbbsb".as_ptr(),
                key,
                owner,
                t,
                tl,
                h,
                hl,
                pxat,
                d,
                dl,
            ),
            Some((word, None)) => {
                let f = c"ssbbsbc".as_ptr();
                replicate(
                    ctx.ctx,
                    name,
                    f,
                    key,
                    owner,
                    t,
                    tl,
                    h,
                    hl,
                    pxat,
                    d,
                    dl,
                    word.as_ptr(),
                )
            }
            Some((word, Some(limit))) => {
                let f = c"ssbbsbcb".as_ptr();
                let (w, l, ll) = (word.as_ptr(), limit.as_ptr(), limit.len());
                replicate(
                    ctx.ctx, name, f, key, owner, t, tl, h, hl, pxat, d, dl, w, l, ll,
                )
            }
        }
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
