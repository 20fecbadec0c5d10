//! Node-level commands: the fencing counter, and `DLOCK.APPLY` / `DLOCK.RAISE`, the effect
//! forms of lock writes that replicas and the AOF replay.
//!
//! From the node's master or its own AOF they are applied as given (range-checked only). From
//! an ordinary client — possible on servers without internal commands (before Redis 8) — a token
//! must also pass the node's limit, so no client can exhaust or wrap the counter.

use dlock_core::TokenRefused;
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::value::Record;
use crate::keyspace::{LockKey, FOLLOW_KEY_TTL};
use crate::node::node;
use crate::replication::effects;
use crate::server;
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, Arg};

/// `DLOCK.COUNTER` -> the node's fencing counter.
pub fn counter(_ctx: &Context, _argv: &[Arg]) -> RedisResult {
    Ok(RedisValue::Integer(
        i64::try_from(node().counter()).unwrap_or(i64::MAX),
    ))
}

/// Commands from the master or the AOF are effects this node already agreed to.
fn trusted(ctx: &Context) -> bool {
    let flags = server::context_flags(ctx.ctx);
    server::flag(flags, raw::REDISMODULE_CTX_FLAGS_REPLICATED) || server::is_loading()
}

fn accept_token(ctx: &Context, bytes: &[u8]) -> Result<u64, RedisError> {
    let token = args::token(bytes)?;
    if trusted(ctx) {
        return Ok(token);
    }
    node()
        .check_client_token(token)
        .map_err(|TokenRefused::TooFarAhead { limit }| errors::token_too_far(token, limit))
}

/// `DLOCK.RAISE token` -> the counter after raising it to at least `token` (never lowers).
pub fn raise(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let token = accept_token(ctx, argv[1].as_bytes())?;
    let counter = {
        let mut node = node();
        node.raise_counter(token);
        node.counter()
    };
    effects::raise(ctx, counter);
    Ok(RedisValue::Integer(
        i64::try_from(counter).unwrap_or(i64::MAX),
    ))
}

const APPLY_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "PXAT",
    takes_value: true,
}];

/// `DLOCK.APPLY key owner token holds [PXAT unix-ms]` -> OK. Stores the lock as given and
/// raises the counter to its token. Without PXAT the lock's deadline is its key's TTL (the form
/// an AOF rewrite of a version-1 lock takes).
pub fn apply(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let token = accept_token(ctx, argv[3].as_bytes())?;
    let holds = args::holds(argv[4].as_bytes())?;
    let [pxat] = args::options(argv[5..].iter().map(Arg::as_bytes), &APPLY_OPTIONS)?;
    let deadline_ms = match pxat {
        Some(Some(at)) => args::unix_ms(at)?,
        _ => FOLLOW_KEY_TTL,
    };
    let mut key = LockKey::open(ctx, &argv[1], true);
    key.stored()?; // WRONGTYPE on a key of another type
    key.put(owner, token, holds, deadline_ms)?;
    node().raise_counter(token);
    let record = Record {
        owner,
        token,
        holds,
        deadline_ms,
        place: key.place(),
    };
    effects::apply(ctx, key.name(), Some(&argv[2]), &record);
    key.changed(crate::keyspace::notify::ACQUIRE);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
