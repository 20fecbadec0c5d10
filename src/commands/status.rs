//! The read-only commands about one resource: `DLOCK.STATUS` and `DLOCK.WAITERS`.

use dlock_core::{Holder, Holders, Kind};
use redis_module::{Context, RedisResult, RedisValue};

use super::reply::{self, Reply};
use crate::keyspace::LockKey;
use crate::server;
use crate::waiting::{self, Waiters};
use crate::wire::args::{self, OptionSpec};
use crate::wire::Arg;

const STATUS_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "COUNT",
    takes_value: true,
}];

/// Holders a STATUS lists unless told otherwise.
const DEFAULT_COUNT: u64 = 100;

/// `DLOCK.STATUS key [COUNT n]` -> nil when nobody holds it; for a plain lock (one exclusive
/// holder) `owner token ttl holds waiters`; otherwise `kind` (`shared` or `semaphore`), `limit`
/// (a semaphore's), `count` (live holders), `holders` (at most `n`, soonest lease end first:
/// `owner token ttl holds mode` each) and `waiters`. A map under RESP3, pairs under RESP2, in
/// that order.
pub fn status(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let [count] = args::options(argv[2..].iter().map(Arg::as_bytes), &STATUS_OPTIONS)?;
    let count = count.flatten().map(args::top_count).transpose()?;
    let listed = usize::try_from(count.unwrap_or(DEFAULT_COUNT)).unwrap_or(usize::MAX);
    let key = LockKey::open(ctx, &argv[1], false);
    let now_ms = server::now_ms();
    let view = key.view(now_ms)?;
    let Some(kind) = view.kind() else {
        return Ok(RedisValue::Null);
    };
    let waiters = integer(Waiters::of(ctx, &argv[1]).count() as u64);
    if let Some(h) = view.sole_exclusive() {
        let mut fields = holder_fields(&h, now_ms);
        fields.pop(); // a plain lock's reply has no mode
        fields.push(("waiters", Reply::Value(waiters)));
        reply::send(ctx, &Reply::Map(fields));
        return Ok(RedisValue::NoReply);
    }
    let (word, limit) = match kind {
        Kind::Lock => ("shared", None),
        Kind::Semaphore { limit } => ("semaphore", Some(limit)),
    };
    let mut fields = vec![("kind", Reply::Value(RedisValue::SimpleStringStatic(word)))];
    if let Some(limit) = limit {
        fields.push(("limit", Reply::Value(integer(u64::from(limit)))));
    }
    fields.push(("count", Reply::Value(integer(view.count() as u64))));
    let holders = view.live().take(listed);
    let holders = holders.map(|h| Reply::Map(holder_fields(&h, now_ms)));
    fields.push(("holders", Reply::List(holders.collect())));
    fields.push(("waiters", Reply::Value(waiters)));
    reply::send(ctx, &Reply::Map(fields));
    Ok(RedisValue::NoReply)
}

/// One holder's fields, in the documented order: owner, token, ttl (ms left), holds, mode.
fn holder_fields(h: &Holder<'_>, now_ms: u64) -> Vec<(&'static str, Reply)> {
    let mode = RedisValue::SimpleStringStatic(waiting::mode_word(h.mode));
    vec![
        (
            "owner",
            Reply::Value(RedisValue::StringBuffer(h.owner.to_vec())),
        ),
        ("token", Reply::Value(integer(h.token))),
        (
            "ttl",
            Reply::Value(integer(h.deadline_ms.saturating_sub(now_ms))),
        ),
        ("holds", Reply::Value(integer(u64::from(h.holds)))),
        ("mode", Reply::Value(mode)),
    ]
}

pub fn integer(value: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

/// `DLOCK.WAITERS key` -> the queue in service order: `[owner, ticket or nil, ms waited, what it
/// waits for]` each.
pub fn waiters(ctx: &Context, argv: &[Arg]) -> RedisResult {
    Ok(RedisValue::Array(Waiters::of(ctx, &argv[1]).list()))
}
