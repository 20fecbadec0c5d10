//! The lock commands: parse, read the lock, ask the rules in `dlock_core`, apply the answer to
//! the key, replicate its effect, tell watchers, count it.

use dlock_core::lock::{self as rules, Fence, Release};
use dlock_core::wait::{Decision, Request};
use dlock_core::{Clock, SystemClock};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

use super::args::{self, OptionSpec};
use super::{errors, Arg};
use crate::keyspace::value::Record;
use crate::keyspace::writes::{self, Refusal};
use crate::keyspace::LockKey;
use crate::node::node;
use crate::observability::stats::{
    self, CONTENDED, EXTENDS, FENCES, FORCED, RELEASES, REVOCATIONS,
};
use crate::replication::notify;
use crate::waiting::{self, Place, Wait};
use crate::{config, server};

const ACQUIRE_OPTIONS: [OptionSpec; 3] = [
    OptionSpec {
        name: "REENTRANT",
        takes_value: false,
    },
    OptionSpec {
        name: "WAIT",
        takes_value: true,
    },
    OptionSpec {
        name: "TICKET",
        takes_value: true,
    },
];

/// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT] [WAIT timeout-ms] [TICKET n]` -> token, or nil
/// when held by another owner (with WAIT: once granted, or nil at the timeout).
pub fn acquire(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let [reentrant, wait, ticket] =
        args::options(argv[4..].iter().map(Arg::as_bytes), &ACQUIRE_OPTIONS)?;
    let timeout_ms = wait.flatten().map(args::wait_timeout_ms).transpose()?;
    let ticket = ticket.flatten().map(args::ticket).transpose()?;
    if ticket.is_some() && timeout_ms.is_none() {
        return Err(errors::ticket_needs_wait());
    }
    let place = waiting::place(ctx, &argv[1]);
    let mut key = LockKey::open(ctx, &argv[1], true);
    let held = key.held(server::now_ms())?;
    let holder_deadline_ms = held.map(|h| h.deadline_ms);
    let request = Request {
        owner,
        reentrant: reentrant.is_some(),
        wait: timeout_ms.is_some() && waiting::may_block(ctx),
        ticket,
        rank: ticket.unwrap_or_else(|| SystemClock.now_us()),
    };
    match waiting::decide(&place, held, &request) {
        Decision::Grant => match grant(ctx, &mut key, &place, &request, ttl_ms) {
            // A waiter waits out the restart quarantine too.
            Err(Refusal::Quarantined { .. }) if request.wait => {
                drop(key);
                waiting::park(ctx, &place, &queued(&request, ttl_ms, timeout_ms, None))
            }
            granted => granted.map_err(RedisError::from),
        },
        Decision::Renew { token, holds } => {
            let record = Record {
                owner,
                token,
                holds,
                deadline_ms: node().deadline_ms(ttl_ms),
                place: key.place(),
            };
            writes::rewrite(ctx, &mut key, &record, notify::ACQUIRE);
            Ok(token_reply(token))
        }
        Decision::Wound => {
            writes::remove(ctx, &mut key, notify::REVOKE);
            stats::count(&REVOCATIONS);
            grant(ctx, &mut key, &place, &request, ttl_ms).map_err(RedisError::from)
        }
        Decision::Enqueue => {
            drop(key);
            let wait = queued(&request, ttl_ms, timeout_ms, holder_deadline_ms);
            waiting::park(ctx, &place, &wait)
        }
        Decision::Contended => {
            stats::count(&CONTENDED);
            Ok(RedisValue::Null)
        }
        Decision::HoldLimit => Err(errors::hold_limit()),
    }
}

fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    place: &Place,
    request: &Request<'_>,
    ttl_ms: u64,
) -> Result<RedisValue, Refusal> {
    let grant = writes::grant(ctx, key, request.owner, ttl_ms)?;
    waiting::granted(place, request.owner, grant.token, request.ticket);
    Ok(token_reply(grant.token))
}

fn queued<'a>(
    request: &Request<'a>,
    ttl_ms: u64,
    timeout_ms: Option<u64>,
    holder_deadline_ms: Option<u64>,
) -> Wait<'a> {
    Wait {
        owner: request.owner,
        rank: request.rank,
        ticketed: request.ticket.is_some(),
        ttl_ms,
        timeout_ms: timeout_ms.unwrap_or(0),
        holder_deadline_ms,
    }
}

/// `DLOCK.RELEASE key owner` -> 1 if `owner` held it, else 0. Also withdraws `owner`'s queued
/// wait on the key (its parked client answers nil); a freed lock goes to the next waiter.
pub fn release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let place = waiting::place(ctx, &argv[1]);
    let mut key = LockKey::open(ctx, &argv[1], true);
    let held = key
        .held(server::now_ms())?
        .map(|h| (rules::release(Some(h), owner), h.token, h.deadline_ms));
    waiting::withdraw(&place, owner);
    match held {
        Some((Release::Decremented { holds }, token, deadline_ms)) => {
            let record = Record {
                owner,
                token,
                holds,
                deadline_ms,
                place: key.place(),
            };
            writes::rewrite(ctx, &mut key, &record, notify::RELEASE);
        }
        Some((Release::Removed, ..)) => {
            writes::remove(ctx, &mut key, notify::RELEASE);
            drop(key);
            waiting::freed(ctx, &place, &argv[1]);
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
    let record = Record {
        owner,
        token,
        holds,
        deadline_ms: node().deadline_ms(ttl_ms),
        place: key.place(),
    };
    writes::rewrite(ctx, &mut key, &record, notify::EXTEND);
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

const FENCE_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "PX",
    takes_value: true,
}];

/// `DLOCK.FENCE key owner token [PX ttl-ms]` -> 1 if held by `owner` (token stored, counter raised), else 0.
pub fn fence(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let token = args::token(argv[3].as_bytes())?;
    let [px] = args::options(argv[4..].iter().map(Arg::as_bytes), &FENCE_OPTIONS)?;
    let ttl_ms = px
        .flatten()
        .map(|ttl| args::ttl_ms(ttl, config::max_ttl_ms(), "PX"))
        .transpose()?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let held = key.held(server::now_ms())?;
    let kept = held.map(|h| (h.holds, h.deadline_ms));
    let fenced = node().fence(held, owner, token); // (the node lock is released here)
    match (fenced, kept) {
        (Fence::Fenced { token }, Some((holds, deadline_ms))) => {
            let record = Record {
                owner,
                token,
                holds,
                // The commit round may set the TTL afresh, so time spent waiting for a
                // majority does not eat the holder's lease (docs/protocol.md §5).
                deadline_ms: ttl_ms.map_or(deadline_ms, |ttl| node().deadline_ms(ttl)),
                place: key.place(),
            };
            writes::rewrite(ctx, &mut key, &record, notify::FENCE);
            waiting::committed(&waiting::place(ctx, &argv[1]));
            stats::count(&FENCES);
            Ok(RedisValue::Integer(1))
        }
        (Fence::TooFarAhead { limit }, _) => Err(errors::token_too_far(token, limit)),
        (Fence::Lowers { current }, _) => Err(errors::token_lowers(token, current)),
        _ => Ok(RedisValue::Integer(0)),
    }
}

/// `DLOCK.STATUS key` -> nil, or `owner <bytes> token <int> ttl <ms> holds <int> waiters <int>`
/// as a map.
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
        (
            "waiters",
            count_reply(waiting::count(&waiting::place(ctx, &argv[1]))),
        ),
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
    writes::remove(ctx, &mut key, notify::FORCE_RELEASE);
    drop(key);
    if was_held {
        stats::count(&FORCED);
    }
    waiting::freed(ctx, &waiting::place(ctx, &argv[1]), &argv[1]);
    Ok(RedisValue::Integer(i64::from(was_held)))
}

fn token_reply(token: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(token).unwrap_or(i64::MAX))
}

fn count_reply(n: usize) -> RedisValue {
    RedisValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// `DLOCK.WAITERS key` -> the queue in service order: `[owner, ticket or nil, ms waited]` each.
pub fn waiters(ctx: &Context, argv: &[Arg]) -> RedisResult {
    Ok(RedisValue::Array(waiting::list(&waiting::place(
        ctx, &argv[1],
    ))))
}
