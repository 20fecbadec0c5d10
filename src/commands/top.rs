//! `DLOCK.TOP [CURSOR c] [COUNT n]`: the node's hot locks, for `dlock top`. Read-only, and
//! bounded per call so that it never stalls the server, whatever the keyspace holds:
//!
//! - `waiting` (first step only, cursor 0): keys of the selected database with waiters, from
//!   the wait registry in module memory (never the keyspace): longest queue first, then the
//!   oldest waiter; at most `n` rows.
//! - `held`: one row per held resource (plain lock, shared lock, semaphore: its holder whose
//!   lease ends first, and how many hold it) among the keys one `SCAN c COUNT n` step returns,
//!   at most `n` rows; `cursor` is the next step's (0: the scan went round). A client walks the
//!   keyspace in steps, as with SCAN. No `TYPE` filter: a resource is one of two types, and SCAN
//!   filters by one; each key returned is opened and its type checked instead (what SCAN's
//!   filter does too: a lookup per key). SCAN may return more keys than `n` when buckets hold
//!   several: the cursor then points at the same step again, past the rows already returned, so
//!   every call stays within `n` rows and the walk misses nothing (as with SCAN, a resource whose
//!   state changes during the walk may be listed twice or not at all).

use dlock_core::Holders;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use super::reply::{self, Reply};
use super::status::integer;
use crate::keyspace::LockKey;
use crate::server;
use crate::server::selected_db;
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
/// well under a millisecond (docs/bench/top.md) at a tenth of the calls.
const DEFAULT_COUNT: u64 = 100;

/// The bits of a TOP cursor that are SCAN's; the ones above count the rows of that SCAN step
/// already returned (a step can find more held resources than COUNT rows: the next call scans
/// the same step again and goes on from there). SCAN cursors never reach 2^48.
const SCAN_BITS: u32 = 48;

pub fn top(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let [cursor, count] = args::options(argv[1..].iter().map(Arg::as_bytes), &OPTIONS)?;
    let cursor = cursor.flatten().map(args::cursor).transpose()?.unwrap_or(0);
    let count = count
        .flatten()
        .map(args::top_count)
        .transpose()?
        .unwrap_or(DEFAULT_COUNT);
    let (scan, skip) = (cursor & ((1 << SCAN_BITS) - 1), cursor >> SCAN_BITS);
    let (next, keys) = scan_step(ctx, scan, count)?;
    let now_ms = server::now_ms();
    let rows = usize::try_from(count).unwrap_or(usize::MAX);
    let skip = usize::try_from(skip).unwrap_or(usize::MAX);
    let mut held: Vec<RedisValue> = keys
        .iter()
        .filter_map(|key| held_row(ctx, key, now_ms))
        .skip(skip)
        .take(rows + 1)
        .collect();
    let next = match held.len() > rows {
        true => {
            held.pop();
            scan | (((skip + rows) as u64) << SCAN_BITS) // this step again, past these rows
        }
        false => next,
    };
    let waiting = match cursor {
        0 => waiting_rows(ctx, count, now_ms),
        _ => Vec::new(),
    };
    let fields = vec![
        (
            "cursor",
            Reply::Value(RedisValue::BulkString(next.to_string())),
        ),
        ("waiting", Reply::Value(RedisValue::Array(waiting))),
        ("held", Reply::Value(RedisValue::Array(held))),
    ];
    reply::send(ctx, &Reply::Map(fields));
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

/// `[key, owner, token, ttl-ms, holds, waiters, mode, holders]` for a held resource: its holder
/// whose lease ends first, and how many hold it (none for other types, free resources, and
/// values moved here from another key).
fn held_row(ctx: &Context, key: &[u8], now_ms: u64) -> Option<RedisValue> {
    // Binary-safe: a key name may hold any byte, NUL included (create_string panics on NUL).
    let name = RedisString::create_from_slice(ctx.ctx, key);
    let arg = Arg::new(name.inner);
    let lock = LockKey::open(ctx, &arg, false);
    let view = lock.view(now_ms).ok()?; // another type: no row
    let first = view.live().next()?;
    let waiters = integer(Waiters::of(ctx, &arg).count() as u64);
    Some(RedisValue::Array(vec![
        RedisValue::StringBuffer(key.to_vec()),
        RedisValue::StringBuffer(first.owner.to_vec()),
        integer(first.token),
        integer(first.deadline_ms.saturating_sub(now_ms)),
        integer(u64::from(first.holds)),
        waiters,
        RedisValue::SimpleStringStatic(waiting::mode_word(first.mode)),
        integer(view.count() as u64),
    ]))
}

/// `[key, waiters, oldest-wait-ms, owner, token, ttl-ms]` per key with waiters, naming the
/// holder whose lease ends first; the last three nil while the resource is free (a handoff is
/// due, held up by a quarantine or a pause).
fn waiting_rows(ctx: &Context, count: u64, now_ms: u64) -> Vec<RedisValue> {
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    waiting::busiest(selected_db(ctx), limit)
        .into_iter()
        .map(|queued| {
            let name = RedisString::create_from_slice(ctx.ctx, queued.key.as_slice());
            let arg = Arg::new(name.inner);
            let lock = LockKey::open(ctx, &arg, false);
            let view = lock.view(now_ms);
            let first = view.as_ref().ok().and_then(|v| v.live().next());
            let holder = match first {
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
