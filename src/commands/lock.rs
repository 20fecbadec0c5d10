//! The lock commands: parse, read the lock, ask the rules in `dlock_core`, apply the answer to
//! the key, replicate its effect, tell watchers, count it.

use dlock_core::group::Want;
use dlock_core::lock::{self as rules, Fence, Release};
use dlock_core::node::deadline_at;
use dlock_core::wait::{Decision, Request};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::notify;
use crate::keyspace::value::Record;
use crate::keyspace::LockKey;
use crate::node::node;
use crate::stats::{self, CONTENDED, EXTENDS, FENCES, FORCED, RELEASES, REVOCATIONS};
use crate::waiting::{self, Wait, Waiters};

use super::group;
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, Arg};
use crate::writes::{self, Refusal};
use crate::{config, server};

const ACQUIRE_OPTIONS: [OptionSpec; 5] = [
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
    OptionSpec {
        name: "SHARED",
        takes_value: false,
    },
    OptionSpec {
        name: "LIMIT",
        takes_value: true,
    },
];

/// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT] [WAIT timeout-ms] [TICKET n] [SHARED | LIMIT k]`
/// -> token, or nil when not available (with WAIT: once granted, or nil at the timeout).
pub fn acquire(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let [reentrant, wait, ticket, shared, limit] =
        args::options(argv[4..].iter().map(Arg::as_bytes), &ACQUIRE_OPTIONS)?;
    let timeout_ms = wait.flatten().map(args::wait_timeout_ms).transpose()?;
    let ticket = ticket.flatten().map(args::ticket).transpose()?;
    if ticket.is_some() && timeout_ms.is_none() {
        return Err(errors::ticket_needs_wait());
    }
    let want = args::want(shared, limit)?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let waiters = Waiters::of(ctx, &argv[1]);
    let now_us = server::now_us(); // one reading: the lock found, the rank, token and deadline
    let request = Request {
        owner,
        reentrant: reentrant.is_some(),
        wait: timeout_ms.is_some() && waiting::may_block(ctx),
        ticket,
        rank: ticket.unwrap_or(now_us),
    };
    let wait = Wait {
        owner,
        rank: request.rank,
        ticketed: ticket.is_some(),
        ttl_ms,
        want,
    };
    let timeout_ms = timeout_ms.unwrap_or(0);
    // One read of the key's value: a plain lock goes on here, a group (or SHARED / LIMIT) to
    // the group path.
    let held = match key.held_or_group(now_us / 1000)? {
        Some(held) if want == Want::Exclusive => held,
        _ => {
            let call = group::Call {
                request,
                wait,
                timeout_ms,
                now_us,
            };
            return group::acquire(ctx, (argv, key, &waiters), &call);
        }
    };
    let holder_deadline_ms = held.map(|h| h.deadline_ms);
    match waiters.decide(held, &request) {
        Decision::Grant => match grant(ctx, &mut key, (argv, &waiters), &request, ttl_ms, now_us) {
            // A waiter waits out the restart quarantine too.
            Err(Refusal::Quarantined { .. }) if request.wait => {
                drop(key);
                waiters.park(&wait, timeout_ms, None)
            }
            granted => granted.map_err(RedisError::from),
        },
        Decision::Renew { token, holds } => {
            let deadline_ms = deadline_at(now_us / 1000, ttl_ms);
            renew(ctx, &mut key, argv, (token, holds), deadline_ms)
        }
        Decision::Wound => {
            writes::remove(ctx, &mut key, notify::REVOKE);
            stats::count(&REVOCATIONS);
            grant(ctx, &mut key, (argv, &waiters), &request, ttl_ms, now_us)
                .map_err(RedisError::from)
        }
        Decision::Enqueue => {
            drop(key);
            waiters.park(&wait, timeout_ms, holder_deadline_ms)
        }
        Decision::Contended => {
            stats::count(&CONTENDED);
            Ok(RedisValue::Null)
        }
        Decision::HoldLimit => Err(errors::hold_limit()),
    }
}

/// A fresh grant for an ACQUIRE, dated by the command's one clock reading.
fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (argv, waiters): (&[Arg], &Waiters<'_>),
    request: &Request<'_>,
    ttl_ms: u64,
    now_us: u64,
) -> Result<RedisValue, Refusal> {
    let owner = request.owner;
    let grant = writes::grant(ctx, key, owner, Some(&argv[2]), ttl_ms, now_us)?;
    waiters.granted(owner, grant.token, request.ticket);
    Ok(token_reply(grant.token))
}

/// The same owner takes its lock again: a new deadline, `holds` as the rules counted them.
fn renew(
    ctx: &Context,
    key: &mut LockKey<'_>,
    argv: &[Arg],
    (token, holds): (u64, u16),
    deadline_ms: u64,
) -> RedisResult {
    let record = Record {
        owner: argv[2].as_bytes(),
        token,
        holds,
        deadline_ms,
        place: key.place(),
    };
    writes::rewrite(ctx, key, &record, &argv[2], notify::ACQUIRE);
    Ok(token_reply(token))
}

/// `DLOCK.RELEASE key owner` -> 1 if `owner` held it, else 0. Also withdraws `owner`'s queued
/// wait on the key (its parked client answers nil); a freed lock goes to the next waiter.
pub fn release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let now_ms = server::now_ms();
    // One read of the key's value: a plain lock goes on here, a group to the group path.
    let held = match key.held_or_group(now_ms)? {
        Some(held) => held.map(|h| (rules::release(Some(h), owner), h.token, h.deadline_ms)),
        None => return group::release(ctx, argv, key, now_ms),
    };
    let waiters = Waiters::of(ctx, &argv[1]);
    waiters.withdraw(owner);
    match held {
        Some((Release::Decremented { holds }, token, deadline_ms)) => {
            let record = Record {
                owner,
                token,
                holds,
                deadline_ms,
                place: key.place(),
            };
            writes::rewrite(ctx, &mut key, &record, &argv[2], notify::RELEASE);
        }
        Some((Release::Removed, ..)) => {
            writes::remove(ctx, &mut key, notify::RELEASE);
            drop(key);
            waiters.freed();
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
    let now_ms = server::now_ms();
    let held = match key.held_or_group(now_ms)? {
        Some(held) => held,
        None => return group::extend(ctx, argv, key, now_ms, ttl_ms),
    };
    let Some((token, holds)) = held
        .filter(|h| rules::may_extend(Some(*h), owner))
        .map(|h| (h.token, h.holds))
    else {
        return Ok(RedisValue::Integer(0));
    };
    let record = Record {
        owner,
        token,
        holds,
        deadline_ms: deadline_at(now_ms, ttl_ms),
        place: key.place(),
    };
    writes::rewrite(ctx, &mut key, &record, &argv[2], notify::EXTEND);
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
    let now_ms = server::now_ms();
    let held = match key.held_or_group(now_ms)? {
        Some(held) => held,
        None => return group::fence(ctx, argv, key, (now_ms, token, ttl_ms)),
    };
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
            writes::rewrite(ctx, &mut key, &record, &argv[2], notify::FENCE);
            Waiters::of(ctx, &argv[1]).committed();
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
    let lock = match key.held_or_group(now_ms)? {
        Some(Some(lock)) => lock,
        Some(None) => return Ok(RedisValue::Null),
        None => return group::status(ctx, argv, &key, now_ms),
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
        ("waiters", count_reply(Waiters::of(ctx, &argv[1]).count())),
    ];
    super::reply_map(ctx, &fields);
    Ok(RedisValue::NoReply)
}

/// `DLOCK.FORCERELEASE key` -> 1 if a lock was held, else 0. Removes whatever lock value the
/// key holds, expired or moved ones included.
pub fn force_release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let mut key = LockKey::open(ctx, &argv[1], true);
    let now_ms = server::now_ms();
    let was_held = match key.is_group()? {
        true => !key.group_view()?.live(now_ms).is_empty(),
        false => key.held(now_ms)?.is_some(),
    };
    if key.stored()?.is_none() {
        return Ok(RedisValue::Integer(0));
    }
    writes::remove(ctx, &mut key, notify::FORCE_RELEASE);
    drop(key);
    if was_held {
        stats::count(&FORCED);
    }
    Waiters::of(ctx, &argv[1]).freed();
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
    Ok(RedisValue::Array(Waiters::of(ctx, &argv[1]).list()))
}
