//! Node-level commands: the fencing counter, and `DLOCK.APPLY`, the effect form of a lock
//! write that replicas and the AOF replay.

use redis_module::{Context, RedisResult, RedisValue};

use crate::argv::Arg;

use crate::node::node;
use crate::store::LockKey;
use crate::{args, effects, errors};

/// `DLOCK.COUNTER` -> the node's fencing counter (the highest token issued or fenced).
pub fn counter(_ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 1, 1, "DLOCK.COUNTER", "")?;
    Ok(RedisValue::Integer(node().counter() as i64))
}

/// `DLOCK.RAISE token` -> the counter after raising it to at least `token` (never lowers).
/// Replicas and the AOF receive it; operators can use it after restoring an old backup.
pub fn raise(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 2, 2, "DLOCK.RAISE", "token")?;
    let token = args::token(&argv[1])?;
    let counter = {
        let mut node = node();
        node.raise_counter(token);
        node.counter()
    };
    effects::raise_counter(ctx, counter);
    Ok(RedisValue::Integer(counter as i64))
}

/// `DLOCK.APPLY key owner token holds [PXAT unix-ms]` -> OK. Stores a lock as given and raises
/// the counter to its token. Written by the module for replicas and the AOF; not for clients.
pub fn apply(ctx: &Context, argv: &[Arg]) -> RedisResult {
    const USAGE: &str = "key owner token holds [PXAT unix-ms]";
    if argv.len() != 5 && argv.len() != 7 {
        return Err(errors::arity("DLOCK.APPLY", USAGE));
    }
    let owner = args::owner(&argv[2])?;
    let token = args::token(&argv[3])?;
    let holds = args::holds(&argv[4])?;
    let expire_at = match argv.get(5) {
        Some(flag) => {
            args::flag(Some(flag), "PXAT")?;
            Some(args::unix_ms(&argv[6])?)
        }
        None => None,
    };
    let key = LockKey::open(ctx, &argv[1], true);
    key.lock()?; // WRONGTYPE on a key of another type
    let expire_at = expire_at.or_else(|| key.abs_expire_ms());
    key.put(owner, token, holds);
    if let Some(at) = expire_at {
        key.expire_at(at);
    }
    node().raise_counter(token);
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}
