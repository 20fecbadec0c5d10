//! `DLOCK.TOP [CURSOR c] [COUNT n]`: the node's hot locks, for `dlock top`. Read-only, and
//! bounded per call so that it never stalls the server, whatever the keyspace holds:
//!
//! - `waiting` (first step only, cursor 0): keys of the selected database with waiters, from
//!   the wait registry in module memory (never the keyspace): longest queue first, then the
//!   oldest waiter; at most `n` rows.
//! - `held`: one row per live holder of the lock keys (plain locks, shared locks, semaphores)
//!   among the keys one `SCAN c COUNT n` step returns; `cursor` is the next step's (0: the scan
//!   went round). SCAN's own bound (about `n` buckets per step) is the bound here: a client
//!   walks the keyspace in steps, as with SCAN. No `TYPE` filter: a lock is one of two types,
//!   and SCAN filters by one; each key returned is opened and its type checked instead (what
//!   SCAN's filter does too: a lookup per key).

use redis_module::{Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::key::selected_db;
use crate::keyspace::LockKey;
use crate::server;
use crate::waiting::{self, Waiters};
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, Arg};

const OPTIONS: [OptionSpec; 2] = [
    OptionSpec {
        name: "CURSOR",
        takes_value: true,
    },
    OptionSpec {
        name: "COUNT",
        takes_value: true,
    },
];

/// SCAN's default of 10 would take a client 10,000 calls over 100k keys; 100 keeps one call
/// well under a millisecond (docs/bench.md) at a tenth of the calls.
const DEFAULT_COUNT: u64 = 100;

pub fn top(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let [cursor, count] = args::options(argv[1..].iter().map(Arg::as_bytes), &OPTIONS)?;
    let cursor = cursor.flatten().map(args::cursor).transpose()?.unwrap_or(0);
    let count = count
        .flatten()
        .map(args::top_count)
        .transpose()?
        .unwrap_or(DEFAULT_COUNT);
    let (next, keys) = scan_step(ctx, cursor, count)?;
    let now_ms = server::now_ms();
    let held = keys
        .iter()
        .flat_map(|key| held_rows(ctx, key, now_ms))
        .collect();
    let waiting = match cursor {
        0 => waiting_rows(ctx, count, now_ms),
        _ => Vec::new(),
    };
    let fields = [
        ("cursor", RedisValue::BulkString(next.to_string())),
        ("waiting", RedisValue::Array(waiting)),
        ("held", RedisValue::Array(held)),
    ];
    super::reply_map(ctx, &fields);
    Ok(RedisValue::NoReply)
}

/// One `SCAN cursor COUNT count`: the next cursor and the keys it returned.
fn scan_step(ctx: &Context, cursor: u64, count: u64) -> Result<(u64, Vec<Vec<u8>>), RedisError> {
    let (cursor, count) = (cursor.to_string(), count.to_string());
    let reply = ctx.call(
        "SCAN",
        &[cursor.as_bytes(), b"COUNT".as_slice(), count.as_bytes()],
    )?;
    let RedisValue::Array(mut parts) = reply else {
        return Err(errors::cannot_scan());
    };
    let (Some(RedisValue::Array(keys)), Some(next)) = (parts.pop(), parts.pop()) else {
        return Err(errors::cannot_scan());
    };
    let next = bytes(next)
        .and_then(|b| args::cursor(&b).ok())
        .ok_or_else(errors::cannot_scan)?;
    Ok((next, keys.into_iter().filter_map(bytes).collect()))
}

fn bytes(value: RedisValue) -> Option<Vec<u8>> {
    match value {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => Some(s.into_bytes()),
        RedisValue::StringBuffer(b) => Some(b),
        _ => None,
    }
}

/// `[key, owner, token, ttl-ms, holds, waiters, mode]` per live holder, if the key is a lock
/// (none for other types, free locks, and locks moved here from another key).
fn held_rows(ctx: &Context, key: &[u8], now_ms: u64) -> Vec<RedisValue> {
    let name = ctx.create_string(key);
    let arg = Arg::new(name.inner);
    let lock = LockKey::open(ctx, &arg, false);
    let Ok(view) = lock.group_view() else {
        return Vec::new(); // another type
    };
    let live = view.live(now_ms);
    if live.is_empty() {
        return Vec::new();
    }
    let waiters = integer(Waiters::of(ctx, &arg).count() as u64);
    live.iter()
        .map(|holder| {
            RedisValue::Array(vec![
                RedisValue::StringBuffer(key.to_vec()),
                RedisValue::StringBuffer(holder.owner.to_vec()),
                integer(holder.token),
                integer(holder.deadline_ms.saturating_sub(now_ms)),
                integer(u64::from(holder.holds)),
                waiters.clone(),
                RedisValue::SimpleStringStatic(waiting::mode_word(holder.mode)),
            ])
        })
        .collect()
}

/// `[key, waiters, oldest-wait-ms, owner, token, ttl-ms]` per key with waiters, naming the first
/// live holder (a shared lock may have more: the held rows list them); the last three nil while
/// the lock is free (a handoff is due, held up by a quarantine or a pause).
fn waiting_rows(ctx: &Context, count: u64, now_ms: u64) -> Vec<RedisValue> {
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    waiting::busiest(selected_db(ctx), limit)
        .into_iter()
        .map(|queued| {
            let name = ctx.create_string(queued.key.as_slice());
            let arg = Arg::new(name.inner);
            let lock = LockKey::open(ctx, &arg, false);
            let view = lock.group_view().unwrap_or_default();
            let holder = match view.live(now_ms).first() {
                Some(first) => [
                    RedisValue::StringBuffer(first.owner.to_vec()),
                    integer(first.token),
                    integer(first.deadline_ms.saturating_sub(now_ms)),
                ],
                None => [RedisValue::Null, RedisValue::Null, RedisValue::Null],
            };
            let mut row = vec![
                RedisValue::StringBuffer(queued.key),
                integer(queued.waiters as u64),
                integer(queued.oldest_ms),
            ];
            row.extend(holder);
            RedisValue::Array(row)
        })
        .collect()
}

fn integer(value: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}
