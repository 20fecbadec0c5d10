//! The lock commands on a resource with several holders — a shared (read/write) lock or a
//! semaphore — or asked as one (`SHARED`, `LIMIT k`): read the holders, ask
//! `dlock_core::group`, write the new holders (replicated holder by holder), reply. A plain lock
//! met here is one exclusive holder. Each holder has its own token, hold count and lease.

use dlock_core::group::{self, Decision, Entry, Mode, Want};
use dlock_core::node::deadline_at;
use dlock_core::wait::Request;
use redis_module::redisvalue::RedisValueKey;
use redis_module::{Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::group::Group;
use crate::keyspace::{notify, LockKey};
use crate::node::node;
use crate::stats::{self, CONTENDED, EXTENDS, FENCES, RELEASES, REVOCATIONS};
use crate::waiting::{self, Wait, Waiters};
use crate::wire::{errors, Arg};
use crate::writes::{self, Refusal};

/// One ACQUIRE, parsed, with the wall clock read once.
pub struct Call<'a> {
    pub request: Request<'a>,
    pub wait: Wait<'a>,
    pub timeout_ms: u64,
    pub now_us: u64,
}

pub fn acquire(
    ctx: &Context,
    (argv, mut key, waiters): (&[Arg], LockKey<'_>, &Waiters<'_>),
    call: &Call<'_>,
) -> RedisResult {
    let (req, want, now_ms) = (&call.request, call.wait.want, call.now_us / 1000);
    let before = key.group_view()?;
    let live = before.live(now_ms);
    let kind = group::kind_of(&live, before.limit);
    let decision = waiters.decide_group((kind, &live), req, want);
    let next_deadline = group::next_deadline(&live);
    let victims: Vec<(Vec<u8>, Mode)> = match &decision {
        Decision::Wound { victims } => victims
            .iter()
            .map(|&i| (live[i].owner.to_vec(), live[i].mode))
            .collect(),
        _ => Vec::new(),
    };
    drop(live);
    let ttl_ms = call.wait.ttl_ms;
    match decision {
        Decision::Grant => match grant(ctx, &mut key, (&before, waiters), call) {
            // A waiter waits out the restart quarantine too.
            Err(Refusal::Quarantined { .. }) if req.wait => {
                drop(key);
                waiters.park(&call.wait, call.timeout_ms, None)
            }
            granted => granted.map_err(RedisError::from),
        },
        Decision::Downgrade { token } => {
            let deadline_ms = deadline_at(now_ms, ttl_ms);
            writes::downgrade(
                ctx,
                &mut key,
                &before,
                req.owner,
                (token, deadline_ms),
                now_ms,
            )?;
            Ok(token_reply(token))
        }
        Decision::Renew { token, holds } => {
            let deadline_ms = deadline_at(now_ms, ttl_ms);
            let (owner, mode) = (req.owner, want.mode());
            writes::change_holders(ctx, &mut key, (&before, now_ms), notify::ACQUIRE, |g| {
                if let Some(at) = g.position(owner, mode) {
                    g.holders[at].holds = holds;
                    g.holders[at].deadline_ms = deadline_ms;
                }
            })?;
            Ok(token_reply(token))
        }
        Decision::Wound { .. } => {
            writes::change_holders(ctx, &mut key, (&before, now_ms), notify::REVOKE, |g| {
                g.holders
                    .retain(|h| !victims.iter().any(|(o, m)| **o == *h.owner && *m == h.mode));
            })?;
            for _ in &victims {
                stats::count(&REVOCATIONS);
            }
            let after = key.group_view()?;
            grant(ctx, &mut key, (&after, waiters), call).map_err(RedisError::from)
        }
        Decision::Enqueue => {
            drop(key);
            waiters.park(&call.wait, call.timeout_ms, next_deadline)
        }
        Decision::Contended => {
            stats::count(&CONTENDED);
            let _ = argv;
            Ok(RedisValue::Null)
        }
        Decision::WrongKind { is } => Err(errors::wrong_kind(is, want)),
        Decision::UpgradeRefused => Err(errors::upgrade_refused()),
        Decision::HoldLimit => Err(errors::hold_limit()),
    }
}

/// A fresh place for the caller, tentative if ticketed.
fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (before, waiters): (&Group, &Waiters<'_>),
    call: &Call<'_>,
) -> Result<RedisValue, Refusal> {
    let (owner, want) = (call.request.owner, call.wait.want);
    let grant = writes::grant_holder(
        ctx,
        key,
        before,
        (owner, want),
        call.wait.ttl_ms,
        call.now_us,
    )?;
    match want {
        Want::Exclusive => waiters.granted(owner, grant.token, call.request.ticket),
        Want::Shared | Want::Permit { .. } => {
            waiters.granted_holder(owner, grant.token, call.request.ticket)
        }
    }
    Ok(token_reply(grant.token))
}

/// `DLOCK.RELEASE` on a group: one hold of the owner's exclusive entry if it has one, else of
/// its shared entry or permit; a place freed goes to the waiters at once.
pub fn release(ctx: &Context, argv: &[Arg], mut key: LockKey<'_>, now_ms: u64) -> RedisResult {
    let owner = argv[2].as_bytes();
    let before = key.group_view()?;
    let live = before.live(now_ms);
    let outcome = group::release(&live, owner);
    let target = match outcome {
        group::Release::Decremented { at, .. } | group::Release::Removed { at } => {
            Some((live[at].owner.to_vec(), live[at].mode))
        }
        group::Release::NotHeld => None,
    };
    drop(live);
    let waiters = Waiters::of(ctx, &argv[1]);
    waiters.withdraw(owner);
    let Some((who, mode)) = target else {
        return Ok(RedisValue::Integer(0));
    };
    writes::change_holders(ctx, &mut key, (&before, now_ms), notify::RELEASE, |g| {
        let Some(at) = g.position(&who, mode) else {
            return;
        };
        match outcome {
            group::Release::Decremented { holds, .. } => g.holders[at].holds = holds,
            _ => drop(g.holders.remove(at)),
        }
    })?;
    drop(key);
    if matches!(outcome, group::Release::Removed { .. }) {
        waiters.freed();
    }
    stats::count(&RELEASES);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.EXTEND` on a group: every entry of the owner gets the new deadline.
pub fn extend(
    ctx: &Context,
    argv: &[Arg],
    mut key: LockKey<'_>,
    now_ms: u64,
    ttl_ms: u64,
) -> RedisResult {
    let owner = argv[2].as_bytes();
    let before = key.group_view()?;
    if group::entries_of(&before.live(now_ms), owner).is_empty() {
        return Ok(RedisValue::Integer(0));
    }
    let deadline_ms = deadline_at(now_ms, ttl_ms);
    writes::change_holders(ctx, &mut key, (&before, now_ms), notify::EXTEND, |g| {
        for h in g.holders.iter_mut().filter(|h| *h.owner == *owner) {
            h.deadline_ms = deadline_ms;
        }
    })?;
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.FENCE` on a group: commits `token` on every entry of the owner (never lowering the
/// newest), and `PX` resets their leases.
pub fn fence(
    ctx: &Context,
    argv: &[Arg],
    mut key: LockKey<'_>,
    (now_ms, token, ttl_ms): (u64, u64, Option<u64>),
) -> RedisResult {
    let owner = argv[2].as_bytes();
    let before = key.group_view()?;
    let newest = group::newest_of(&before.live(now_ms), owner).map(held_of);
    match node().fence(newest, owner, token) {
        dlock_core::Fence::Fenced { token } => {
            let deadline = ttl_ms.map(|ttl| deadline_at(now_ms, ttl));
            writes::change_holders(ctx, &mut key, (&before, now_ms), notify::FENCE, |g| {
                for h in g.holders.iter_mut().filter(|h| *h.owner == *owner) {
                    h.token = token;
                    h.deadline_ms = deadline.unwrap_or(h.deadline_ms);
                }
            })?;
            Waiters::of(ctx, &argv[1]).committed_holder(owner);
            stats::count(&FENCES);
            Ok(RedisValue::Integer(1))
        }
        dlock_core::Fence::TooFarAhead { limit } => Err(errors::token_too_far(token, limit)),
        dlock_core::Fence::Lowers { current } => Err(errors::token_lowers(token, current)),
        dlock_core::Fence::NotHeld => Ok(RedisValue::Integer(0)),
    }
}

fn held_of(entry: Entry<'_>) -> dlock_core::Held<'_> {
    dlock_core::Held {
        owner: entry.owner,
        token: entry.token,
        holds: entry.holds,
        deadline_ms: entry.deadline_ms,
    }
}

/// `DLOCK.STATUS` of a group: `kind`, `limit` (semaphores), `holders` (owner, token, ttl, holds
/// and mode each) and `waiters`; nil when nobody holds it.
pub fn status(ctx: &Context, argv: &[Arg], key: &LockKey<'_>, now_ms: u64) -> RedisResult {
    let view = key.group_view()?;
    let live = view.live(now_ms);
    let Some(kind) = group::kind_of(&live, view.limit) else {
        return Ok(RedisValue::Null);
    };
    let holders = live.iter().map(|e| holder_reply(e, now_ms)).collect();
    let (kind_word, limit) = match kind {
        group::Kind::Lock => ("shared", None),
        group::Kind::Semaphore { limit } => ("semaphore", Some(limit)),
    };
    let mut fields = vec![("kind", RedisValue::SimpleStringStatic(kind_word))];
    if let Some(limit) = limit {
        fields.push(("limit", RedisValue::Integer(i64::from(limit))));
    }
    fields.push(("holders", RedisValue::Array(holders)));
    let waiting = Waiters::of(ctx, &argv[1]).count();
    fields.push((
        "waiters",
        RedisValue::Integer(i64::try_from(waiting).unwrap_or(i64::MAX)),
    ));
    super::reply_map(ctx, &fields);
    Ok(RedisValue::NoReply)
}

/// One holder as a map (a map reply under RESP3, pairs under RESP2).
fn holder_reply(e: &Entry<'_>, now_ms: u64) -> RedisValue {
    let ttl = e.deadline_ms.saturating_sub(now_ms);
    let field = |name: &str| RedisValueKey::String(name.to_string());
    let fields = [
        (field("owner"), RedisValue::StringBuffer(e.owner.to_vec())),
        (field("token"), token_reply(e.token)),
        (
            field("ttl"),
            RedisValue::Integer(i64::try_from(ttl).unwrap_or(i64::MAX)),
        ),
        (field("holds"), RedisValue::Integer(i64::from(e.holds))),
        (
            field("mode"),
            RedisValue::SimpleStringStatic(waiting::mode_word(e.mode)),
        ),
    ];
    RedisValue::OrderedMap(fields.into_iter().collect())
}

fn token_reply(token: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(token).unwrap_or(i64::MAX))
}
