//! The DLOCK.* commands: parse, read the stored lock, ask the rules in [`crate::lock`], apply the
//! answer, and replicate its *effect* (absolute expiry, chosen token), never the logic.

use redis_module::{Context, RedisResult, RedisValue};

use crate::argv::Arg;

use crate::lock::{self, Acquire, Fence, Release};
use crate::node::node;
use crate::stats::{self, CONTENDED, EXTENDS, FENCES, FORCED, GRANTS, RELEASES};
use crate::store::{LockKey, StoredLock};
use crate::{args, config, effects, errors};

/// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT]` -> token, or nil when held by another owner.
pub fn acquire(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 4, 5, "DLOCK.ACQUIRE", "key owner ttl-ms [REENTRANT]")?;
    let owner = args::owner(&argv[2])?;
    let ttl_ms = args::ttl_ms(&argv[3])?;
    let reentrant = args::flag(argv.get(4), "REENTRANT")?;
    let key = LockKey::open(ctx, &argv[1], true);
    let stored = key.lock()?;
    let (decision, expire_at) = {
        let mut node = node();
        let decision = node.acquire(
            stored.map(StoredLock::held),
            owner,
            reentrant,
            &config::settings(),
        );
        (decision, lock::Clock::now_ms(node.clock()) + ttl_ms)
    };
    let token = match (decision, stored) {
        (Acquire::Granted { token }, _) => {
            let lock = key.put(owner, token, 1);
            key.expire_at(expire_at);
            effects::store(ctx, &argv[1], lock, Some(expire_at));
            stats::count(&GRANTS);
            token
        }
        (Acquire::Renewed { token, holds }, Some(lock)) => {
            let holds_changed = lock.holds() != holds;
            lock.set_holds(holds);
            key.expire_at(expire_at);
            if holds_changed {
                effects::store(ctx, &argv[1], lock, Some(expire_at));
            } else {
                effects::expire_at(ctx, &argv[1], expire_at);
            }
            token
        }
        (Acquire::Quarantined { ms_left }, _) => return Err(errors::quarantined(ms_left)),
        (Acquire::HoldLimit, _) => return Err(errors::hold_limit()),
        (Acquire::Contended | Acquire::Renewed { .. }, _) => {
            stats::count(&CONTENDED);
            return Ok(RedisValue::Null);
        }
    };
    Ok(RedisValue::Integer(token as i64))
}

/// `DLOCK.RELEASE key owner` -> 1 if `owner` held it, else 0.
pub fn release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 3, 3, "DLOCK.RELEASE", "key owner")?;
    let owner = args::owner(&argv[2])?;
    let key = LockKey::open(ctx, &argv[1], true);
    let stored = key.lock()?;
    match (lock::release(stored.map(StoredLock::held), owner), stored) {
        (Release::Decremented { holds }, Some(lock)) => {
            lock.set_holds(holds);
            effects::store(ctx, &argv[1], lock, None);
        }
        (Release::Removed, _) => {
            key.delete();
            effects::delete(ctx, &argv[1]);
        }
        _ => return Ok(RedisValue::Integer(0)),
    }
    stats::count(&RELEASES);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.EXTEND key owner ttl-ms` -> 1 if held by `owner` (TTL reset), else 0.
pub fn extend(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 4, 4, "DLOCK.EXTEND", "key owner ttl-ms")?;
    let owner = args::owner(&argv[2])?;
    let ttl_ms = args::ttl_ms(&argv[3])?;
    let key = LockKey::open(ctx, &argv[1], true);
    let stored = key.lock()?;
    if !lock::may_extend(stored.map(StoredLock::held), owner) {
        return Ok(RedisValue::Integer(0));
    }
    let expire_at = lock::Clock::now_ms(node().clock()) + ttl_ms;
    key.expire_at(expire_at);
    effects::expire_at(ctx, &argv[1], expire_at);
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.FENCE key owner token` -> 1 if held by `owner` (counter raised, token stored), else 0.
pub fn fence(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 4, 4, "DLOCK.FENCE", "key owner token")?;
    let owner = args::owner(&argv[2])?;
    let token = args::token(&argv[3])?;
    let key = LockKey::open(ctx, &argv[1], true);
    let stored = key.lock()?;
    let decision = node().fence(stored.map(StoredLock::held), owner, token);
    match (decision, stored) {
        (Fence::Fenced { token }, Some(lock)) => {
            lock.set_token(token);
            effects::store(ctx, &argv[1], lock, None);
            stats::count(&FENCES);
            Ok(RedisValue::Integer(1))
        }
        _ => Ok(RedisValue::Integer(0)),
    }
}

/// `DLOCK.STATUS key` -> nil, or `owner <bytes> token <int> ttl <ms> holds <int>` as a map.
pub fn status(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 2, 2, "DLOCK.STATUS", "key")?;
    let key = LockKey::open(ctx, &argv[1], false);
    let Some(lock) = key.lock()? else {
        return Ok(RedisValue::Null);
    };
    let ttl = key.ttl_ms().map_or(-1, |ms| ms as i64);
    let fields = [
        ("owner", RedisValue::StringBuffer(lock.owner().to_vec())),
        ("token", RedisValue::Integer(lock.token() as i64)),
        ("ttl", RedisValue::Integer(ttl)),
        ("holds", RedisValue::Integer(i64::from(lock.holds()))),
    ];
    // Replied by hand: the crate's map types would reorder the fields.
    unsafe { redis_module::raw::RedisModule_ReplyWithMap.expect("ReplyWithMap")(ctx.ctx, 4) };
    for (name, value) in fields {
        ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
        ctx.reply(Ok(value));
    }
    Ok(RedisValue::NoReply)
}

/// `DLOCK.FORCERELEASE key` -> 1 if a lock was removed, else 0 (operator escape hatch).
pub fn force_release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    args::arity(argv, 2, 2, "DLOCK.FORCERELEASE", "key")?;
    let key = LockKey::open(ctx, &argv[1], true);
    if key.lock()?.is_none() {
        return Ok(RedisValue::Integer(0));
    }
    key.delete();
    effects::delete(ctx, &argv[1]);
    stats::count(&FORCED);
    Ok(RedisValue::Integer(1))
}
