//! `DLOCK.OBSERVE key [AFTER token] [OWNER owner] [TIMEOUT ms]`: the server side of leader
//! election's observe. A client learns of every change of a plain lock's holder without polling:
//! it names the token it saw (`AFTER`, 0 for "no holder"), and the owner with it (`OWNER`: a
//! leader proclaiming a new value keeps its token and changes its owner, docs/election.md), and
//! is answered once the holder differs.
//!
//! The client blocks on the key itself (`RedisModule_BlockClientOnKeys`): every lock write
//! signals its key (`keyspace::notify::changed`), and the reply callback reads the key again and
//! stays blocked while the holder's token is the one the client saw (an EXTEND or a renewal is
//! no news). A lease that ends changes no key, so the block's timeout is at most the lease's end:
//! the timeout callback then replies whatever holds the key, like a client's own `TIMEOUT`.
//! The callbacks get the command's arguments again, so a blocked client has no private data;
//! before Redis 7.2, where a deleted key (a released plain lock) wakes no one, its client id is
//! kept in `keyspace::observers` until its wait ends, however it ends.

use std::os::raw::c_int;
use std::ptr;
use std::time::Duration;

use dlock_core::Holder;
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};

use super::reply::{self, Reply};
use super::status::integer;
use crate::keyspace::{observers, LockKey};
use crate::wire::{errors, requests, Arg};
use crate::{server, waiting};

/// What the client saw: the holder's token (0: no holder) and, if it says, its owner.
#[derive(Clone, Copy)]
struct Saw<'a> {
    token: u64,
    owner: Option<&'a [u8]>,
}

impl Saw<'_> {
    /// Whether `holder` is what the client saw.
    fn is(&self, holder: Option<&Holder<'_>>) -> bool {
        match holder {
            None => self.token == 0,
            Some(h) => h.token == self.token && self.owner.is_none_or(|o| o == h.owner),
        }
    }
}

/// One OBSERVE, parsed.
struct Call<'a> {
    /// What the client saw; `None` asks for the state at once.
    after: Option<Saw<'a>>,
    /// The client's own limit on the wait (0: none).
    timeout_ms: u64,
}

/// `DLOCK.OBSERVE key [AFTER token] [OWNER owner] [TIMEOUT ms]` -> nil when nobody holds it, else
/// `owner token ttl` (a map under RESP3, pairs under RESP2); with AFTER, once that differs from
/// what the client saw, or at the TIMEOUT (then possibly the same holder: ask again).
pub fn observe(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let call = parse(argv)?;
    let name = &argv[1];
    // Inside MULTI or a script a client cannot block: it gets the state at once, as BLPOP does.
    let after = call.after.filter(|_| may_block(ctx));
    let Seen::Unchanged { lease_end_ms } = look(ctx, name, after, false) else {
        return Ok(RedisValue::NoReply);
    };
    let timeout_ms = block_timeout(call.timeout_ms, lease_end_ms, server::now_ms());
    if !block(ctx, name, timeout_ms) {
        // This server cannot block on keys: the state, at once.
        look(ctx, name, None, false);
    }
    Ok(RedisValue::NoReply)
}

/// Every argument checked before the key is read: bad input blocks nothing.
fn parse(argv: &[Arg]) -> Result<Call<'_>, RedisError> {
    let request = requests::observe(argv)?;
    Ok(Call {
        after: request.after.map(|(token, owner)| Saw { token, owner }),
        timeout_ms: request.timeout_ms,
    })
}

/// Whether this call may block its client: not inside MULTI, scripts or functions (as BLPOP).
/// Unlike an ACQUIRE's WAIT, a replica may block it: it writes nothing, and the master's changes
/// reach the key through the same signal.
fn may_block(ctx: &Context) -> bool {
    let refused = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;
    !server::flag(server::context_flags(ctx.ctx), refused)
}

/// What an observer finds.
enum Seen {
    /// The state was replied (or an error).
    Replied,
    /// The holder (or its absence) is the one the observer saw; nothing was replied.
    Unchanged { lease_end_ms: Option<u64> },
}

/// Reads the key and replies its state, unless it is the one seen (`after`). A blocked client (`woken`) that finds no holder on a cluster node whose slot is
/// moving or gone is redirected instead: the lock may live on, on the slot's new node.
fn look(ctx: &Context, name: &Arg, after: Option<Saw<'_>>, woken: bool) -> Seen {
    let now_ms = server::now_ms();
    let key = LockKey::open(ctx, name, false);
    let view = match key.view(now_ms) {
        Ok(view) => view,
        Err(wrong_type) => return replied(ctx, wrong_type),
    };
    let holder = match view.plain_holder() {
        Ok(holder) => holder,
        Err(kind) => return replied(ctx, errors::plain_only(kind, "DLOCK.OBSERVE")),
    };
    if after.is_some_and(|saw| saw.is(holder.as_ref())) {
        let lease_end_ms = holder.map(|h| h.deadline_ms);
        return Seen::Unchanged { lease_end_ms };
    }
    if holder.is_none() && woken {
        if let Some(redirect) = waiting::redirect(ctx, name.as_bytes()) {
            return replied(ctx, RedisError::String(redirect));
        }
    }
    reply::send(ctx, &state_reply(holder.as_ref(), now_ms));
    Seen::Replied
}

fn replied(ctx: &Context, error: RedisError) -> Seen {
    ctx.reply(Err(error));
    Seen::Replied
}

/// The reply for a holder, or nil: one place, so a field added reaches every path (the
/// immediate reply, the wake-up and the timeout).
fn state_reply(holder: Option<&Holder<'_>>, now_ms: u64) -> Reply {
    let Some(h) = holder else {
        return Reply::Value(RedisValue::Null);
    };
    Reply::Map(vec![
        (
            "owner",
            Reply::Value(RedisValue::StringBuffer(h.owner.to_vec())),
        ),
        ("token", Reply::Value(integer(h.token))),
        (
            "ttl",
            Reply::Value(integer(h.deadline_ms.saturating_sub(now_ms))),
        ),
    ])
}

/// The block's timeout in ms (0: none): the client's TIMEOUT, or sooner the lease's end (1 ms
/// past it, when the holder is certainly gone), which no key change announces.
fn block_timeout(timeout_ms: u64, lease_end_ms: Option<u64>, now_ms: u64) -> u64 {
    let lease_ms = lease_end_ms.map(|end| end.saturating_sub(now_ms).saturating_add(1));
    match (timeout_ms, lease_ms) {
        (0, lease) => lease.unwrap_or(0),
        (limit, Some(lease)) => limit.min(lease),
        (limit, None) => limit,
    }
}

/// Blocks the calling client on the key for up to `timeout_ms` (0: no limit); false if this
/// server cannot. Where the server can (Redis 7.2+), a deleted key wakes it too.
fn block(ctx: &Context, name: &Arg, timeout_ms: u64) -> bool {
    let mut keys = [name.as_ptr()];
    let timeout = i64::try_from(timeout_ms).unwrap_or(i64::MAX);
    let (ready, timed_out) = (Some(on_ready as Callback), Some(on_timeout as Callback));
    let client = if let Some(block) = crate::api!(RedisModule_BlockClientOnKeysWithFlags) {
        let flags = raw::REDISMODULE_BLOCK_UNBLOCK_DELETED as c_int;
        // SAFETY: the running command's context and key argument (Redis keeps its own
        // reference); static callbacks; no private data, so nothing to free.
        unsafe {
            let keys = keys.as_mut_ptr();
            block(
                ctx.ctx,
                ready,
                timed_out,
                None,
                timeout,
                keys,
                1,
                ptr::null_mut(),
                flags,
            )
        }
    } else if let Some(block) = crate::api!(RedisModule_BlockClientOnKeys) {
        // SAFETY: as above.
        unsafe {
            let keys = keys.as_mut_ptr();
            block(
                ctx.ctx,
                ready,
                timed_out,
                None,
                timeout,
                keys,
                1,
                ptr::null_mut(),
            )
        }
    } else {
        return false;
    };
    if client.is_null() {
        return false;
    }
    if observers::needed() {
        observers::observing(ctx, name);
        if let Some(set) = crate::api!(RedisModule_SetDisconnectCallback) {
            // SAFETY: the handle just returned; the callback lives as long as the module.
            unsafe { set(client, Some(on_disconnect)) };
        }
    }
    wake_at(ctx, timeout_ms);
    true
}

/// Redis checks blocked clients' timeouts between event-loop turns, and an idle server turns
/// only every `1000 / hz` ms: a timer at the timeout makes a turn, so a lease's end is heard
/// within about a millisecond.
fn wake_at(ctx: &Context, timeout_ms: u64) {
    if timeout_ms > 0 {
        let after = Duration::from_millis(timeout_ms.saturating_add(1));
        ctx.create_timer(after, |_: &Context, ()| {}, ());
    }
}

/// The blocked-client callbacks' type (the API takes them as `unsafe`; ours are safe).
type Callback = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// The command's arguments, as Redis hands them to a blocked client's callbacks.
///
/// # Safety
/// `argv` and `argc` must be what Redis passed to the callback.
unsafe fn arguments<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg] {
    match usize::try_from(argc) {
        // SAFETY: Redis passes `argc` valid argument pointers; `Arg` is a transparent wrapper.
        Ok(len) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv.cast(), len) },
        _ => &[],
    }
}

/// The key was signalled: reply if its holder differs from the one the client saw, else stay
/// blocked (REDISMODULE_ERR).
extern "C" fn on_ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let ctx = Context::new(ctx);
    // SAFETY: a blocked client's reply callback, given the command's arguments.
    let argv = unsafe { arguments(argv, argc) };
    let (Some(name), Ok(call)) = (argv.get(1), parse(argv)) else {
        // Checked before blocking; unreachable, but an answer beats a client blocked forever.
        ctx.reply(Err(errors::cannot_store()));
        return raw::REDISMODULE_OK as c_int;
    };
    match look(&ctx, name, call.after, true) {
        Seen::Replied => {
            observers::done(&ctx);
            raw::REDISMODULE_OK as c_int
        }
        Seen::Unchanged { .. } => raw::REDISMODULE_ERR as c_int,
    }
}

/// The client's TIMEOUT or the lease's end: the state as it is now (the same holder after a
/// TIMEOUT or an extended lease: the client compares and asks again).
extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let ctx = Context::new(ctx);
    observers::done(&ctx);
    // SAFETY: a blocked client's timeout callback, given the command's arguments.
    let argv = unsafe { arguments(argv, argc) };
    match argv.get(1) {
        Some(name) => {
            look(&ctx, name, None, true);
        }
        None => {
            ctx.reply(Err(errors::cannot_store()));
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// The client went away (or was redirected, or its node became a replica) while blocked.
extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    _client: *mut raw::RedisModuleBlockedClient,
) {
    observers::done(&Context::new(ctx));
}

#[cfg(test)]
mod tests {
    use super::block_timeout;

    #[test]
    fn the_block_ends_at_the_timeout_or_just_past_the_lease() {
        assert_eq!(block_timeout(0, None, 1_000), 0, "no limit at all");
        assert_eq!(block_timeout(500, None, 1_000), 500);
        assert_eq!(block_timeout(0, Some(1_300), 1_000), 301);
        assert_eq!(block_timeout(200, Some(1_300), 1_000), 200);
        assert_eq!(block_timeout(900, Some(1_300), 1_000), 301);
        assert_eq!(block_timeout(0, Some(900), 1_000), 1, "a lease just ended");
    }
}
