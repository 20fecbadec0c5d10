//! The lock commands: parse, read the lock, ask the rules in `dlock_core`, apply the answer to
//! the key, replicate its effect, tell watchers, count it.

use dlock_core::lock::{self as rules, Acquire, Fence, Release};
use dlock_core::GrantRefused;
use redis_module::{Context, RedisResult, RedisValue};

use super::args::{self, OptionSpec};
use super::{errors, Arg};
use crate::keyspace::value::Record;
use crate::keyspace::LockKey;
use crate::node::node;
use crate::observability::stats::{
    self, CONTENDED, EVICTION_REFUSALS, EXTENDS, FENCES, FORCED, GRANTS, RELEASES,
};
use crate::replication::{effects, notify};
use crate::{config, server};

const ACQUIRE_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "REENTRANT",
    takes_value: false,
}];

/// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT]` -> token, or nil when held by another owner.
pub fn acquire(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let [reentrant] = args::options(argv[4..].iter().map(Arg::as_bytes), &ACQUIRE_OPTIONS)?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let decision = rules::acquire(key.held(server::now_ms())?, owner, reentrant.is_some());
    match decision {
        Acquire::Grant => grant(ctx, &mut key, owner, ttl_ms),
        Acquire::Renew { token, holds } => {
            let deadline_ms = node().deadline_ms(ttl_ms);
            rewrite(
                ctx,
                &mut key,
                owner,
                token,
                holds,
                deadline_ms,
                notify::ACQUIRE,
            );
            Ok(token_reply(token))
        }
        Acquire::Contended => {
            stats::count(&CONTENDED);
            Ok(RedisValue::Null)
        }
        Acquire::HoldLimit => Err(errors::hold_limit()),
    }
}

/// A fresh grant of a free lock: refused while the eviction policy could drop it, during the
/// restart quarantine, and once the counter is exhausted.
fn grant(ctx: &Context, key: &mut LockKey<'_>, owner: &[u8], ttl_ms: u64) -> RedisResult {
    if server::may_evict(server::context_flags(ctx.ctx)) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        return Err(errors::eviction(&server::eviction_policy(ctx)));
    }
    let (token, deadline_ms) = {
        let mut node = node();
        let token = node
            .grant(&config::settings())
            .map_err(|refused| match refused {
                GrantRefused::Quarantined { ms_left } => errors::quarantined(ms_left),
                GrantRefused::Exhausted => errors::exhausted(),
            })?;
        (token, node.deadline_ms(ttl_ms))
    };
    key.put(owner, token, 1, deadline_ms)?;
    let record = Record {
        owner,
        token,
        holds: 1,
        deadline_ms,
        place: key.place(),
    };
    effects::apply(ctx, key.name(), &record);
    key.changed(notify::ACQUIRE);
    stats::count(&GRANTS);
    Ok(token_reply(token))
}

/// Stores new holds, token and deadline in the lock already under `key`, and replicates it.
fn rewrite(
    ctx: &Context,
    key: &mut LockKey<'_>,
    owner: &[u8],
    token: u64,
    holds: u16,
    deadline_ms: u64,
    event: &std::ffi::CStr,
) {
    if let Some(mut value) = key.value_mut() {
        value.set_token(token);
        value.set_holds(holds);
    }
    key.set_deadline(deadline_ms);
    let record = Record {
        owner,
        token,
        holds,
        deadline_ms,
        place: key.place(),
    };
    effects::apply(ctx, key.name(), &record);
    key.changed(event);
}

/// `DLOCK.RELEASE key owner` -> 1 if `owner` held it, else 0.
pub fn release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let held = key
        .held(server::now_ms())?
        .map(|h| (rules::release(Some(h), owner), h.token, h.deadline_ms));
    match held {
        Some((Release::Decremented { holds }, token, deadline_ms)) => {
            rewrite(
                ctx,
                &mut key,
                owner,
                token,
                holds,
                deadline_ms,
                notify::RELEASE,
            );
        }
        Some((Release::Removed, ..)) => {
            key.delete();
            effects::delete(ctx, key.name());
            key.changed(notify::RELEASE);
        }
        _ => return Ok(RedisValue::Integer(0)),
    }
    stats::count(&RELEASES);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.EXTEND key owner ttl-ms` -> 1 if held by `owner` (deadline reset), else 0.
pub fn extend(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let Some((token, holds)) = key
        .held(server::now_ms())?
        .filter(|h| rules::may_extend(Some(*h), owner))
        .map(|h| (h.token, h.holds))
    else {
        return Ok(RedisValue::Integer(0));
    };
    let deadline_ms = node().deadline_ms(ttl_ms);
    rewrite(
        ctx,
        &mut key,
        owner,
        token,
        holds,
        deadline_ms,
        notify::EXTEND,
    );
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.FENCE key owner token` -> 1 if held by `owner` (token stored, counter raised), else 0.
pub fn fence(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let token = args::token(argv[3].as_bytes())?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let held = key.held(server::now_ms())?;
    let kept = held.map(|h| (h.holds, h.deadline_ms));
    match (node().fence(held, owner, token), kept) {
        (Fence::Fenced { token }, Some((holds, deadline_ms))) => {
            rewrite(
                ctx,
                &mut key,
                owner,
                token,
                holds,
                deadline_ms,
                notify::FENCE,
            );
            stats::count(&FENCES);
            Ok(RedisValue::Integer(1))
        }
        (Fence::TooFarAhead { limit }, _) => Err(errors::token_too_far(token, limit)),
        (Fence::Lowers { current }, _) => Err(errors::token_lowers(token, current)),
        _ => Ok(RedisValue::Integer(0)),
    }
}

/// `DLOCK.STATUS key` -> nil, or `owner <bytes> token <int> ttl <ms> holds <int>` as a map.
pub fn status(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let key = LockKey::open(ctx, &argv[1], false);
    let now_ms = server::now_ms();
    let Some(lock) = key.held(now_ms)? else {
        return Ok(RedisValue::Null);
    };
    let ttl = lock.deadline_ms.saturating_sub(now_ms);
    let fields = [
        ("owner", RedisValue::StringBuffer(lock.owner.to_vec())),
        ("token", token_reply(lock.token)),
        (
            "ttl",
            RedisValue::Integer(i64::try_from(ttl).unwrap_or(i64::MAX)),
        ),
        ("holds", RedisValue::Integer(i64::from(lock.holds))),
    ];
    super::reply_map(ctx, &fields);
    Ok(RedisValue::NoReply)
}

/// `DLOCK.FORCERELEASE key` -> 1 if a lock was held, else 0. Removes whatever lock value the
/// key holds, expired or moved ones included.
pub fn force_release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let mut key = LockKey::open(ctx, &argv[1], true);
    let was_held = key.held(server::now_ms())?.is_some();
    if key.stored()?.is_none() {
        return Ok(RedisValue::Integer(0));
    }
    key.delete();
    effects::delete(ctx, key.name());
    key.changed(notify::FORCE_RELEASE);
    if was_held {
        stats::count(&FORCED);
    }
    Ok(RedisValue::Integer(i64::from(was_held)))
}

fn token_reply(token: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(token).unwrap_or(i64::MAX))
}
