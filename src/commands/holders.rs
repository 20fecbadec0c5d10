//! The commands that change an owner's holds or remove a resource: `DLOCK.RELEASE`,
//! `DLOCK.EXTEND`, `DLOCK.FENCE`, `DLOCK.PROCLAIM` and `DLOCK.FORCERELEASE`. Each reads the owner's entries
//! through the rules' questions (at most two: an exclusive one and its shared side), so its cost
//! does not grow with the resource's other holders.

use dlock_core::node::deadline_at;
use dlock_core::rules::{self, Release};
use dlock_core::{Fence, Holders, Mode};
use redis_module::{Context, RedisResult, RedisValue};

use crate::keyspace::view::View;
use crate::keyspace::Lease;
use crate::keyspace::{notify, LockKey};
use crate::node::node;
use crate::stats::{self, EXTENDS, FENCES, FORCED, RELEASES};
use crate::waiting::Waiters;
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, requests, Arg};
use crate::writes::{self, Owner};
use crate::{config, server};

/// The modes of the owner's live entries (at most two).
fn modes_of(view: &View<'_>, owner: &[u8]) -> Vec<Mode> {
    view.mine(owner).iter().map(|h| h.mode).collect()
}

/// `DLOCK.RELEASE key owner` -> 1 if `owner` held it, else 0. One hold of its exclusive entry
/// if it has one, else of its shared entry or permit. Also withdraws `owner`'s queued wait on
/// the key (its parked client answers nil); a place freed goes to the waiters at once.
pub fn release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let who = Owner {
        bytes: owner,
        arg: Some(&argv[2]),
    };
    let mut key = LockKey::open(ctx, &argv[1], true);
    let now_ms = server::now_ms();
    let view = key.view(now_ms)?;
    let outcome = rules::release(&view, owner);
    let waiters = Waiters::of(ctx, &argv[1]);
    waiters.withdraw(owner);
    match outcome {
        Release::NotHeld => return Ok(RedisValue::Integer(0)),
        Release::Decremented { mode, holds } => {
            let event = (notify::RELEASE, now_ms);
            let gone = writes::change(ctx, &mut key, (who, &[mode]), event, |l| l.holds = holds)?;
            waiters.forget(gone.iter().map(|s| &*s.owner));
        }
        Release::Removed { mode, last } => {
            let event = (notify::RELEASE, now_ms);
            let gone = writes::remove(ctx, &mut key, &[(owner, mode)], event)?;
            drop(key);
            let mine = last.then_some(owner);
            waiters.forget(mine.into_iter().chain(gone.iter().map(|s| &*s.owner)));
            waiters.freed();
        }
    }
    stats::count(&RELEASES);
    Ok(RedisValue::Integer(1))
}

/// `DLOCK.EXTEND key owner ttl-ms` -> 1 if `owner` holds it (every entry of the owner gets the
/// new deadline), else 0; a lease that ended is never revived.
pub fn extend(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let now_ms = server::now_ms();
    let modes = modes_of(&key.view(now_ms)?, owner);
    if modes.is_empty() {
        return Ok(RedisValue::Integer(0));
    }
    let who = Owner {
        bytes: owner,
        arg: Some(&argv[2]),
    };
    let deadline_ms = deadline_at(now_ms, ttl_ms);
    let event = (notify::EXTEND, now_ms);
    let gone = writes::change(ctx, &mut key, (who, &modes), event, |l| {
        l.deadline_ms = deadline_ms
    })?;
    let waiters = Waiters::of(ctx, &argv[1]);
    waiters.forget(gone.iter().map(|s| &*s.owner));
    waiters.lease_ends(deadline_ms);
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

const FENCE_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "PX",
    takes_value: true,
}];

/// `DLOCK.FENCE key owner token [PX ttl-ms]` -> 1 if `owner` holds it (the token stored in every
/// entry of the owner, never lowering the newest; the counter raised; PX resets the leases, so
/// time spent waiting for a majority does not eat the holder's lease), else 0.
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
    let view = key.view(now_ms)?;
    let mine = view.mine(owner);
    let modes: Vec<Mode> = mine.iter().map(|h| h.mode).collect();
    let fenced = node().fence(mine.newest(), owner, token); // (node lock released here)
    match fenced {
        Fence::Fenced { token } => {
            let who = Owner {
                bytes: owner,
                arg: Some(&argv[2]),
            };
            let deadline = ttl_ms.map(|ttl| deadline_at(now_ms, ttl));
            let event = (notify::FENCE, now_ms);
            let gone = writes::change(ctx, &mut key, (who, &modes), event, |l| {
                l.token = token;
                l.deadline_ms = deadline.unwrap_or(l.deadline_ms);
            })?;
            let committed = std::iter::once(owner);
            let waiters = Waiters::of(ctx, &argv[1]);
            waiters.forget(committed.chain(gone.iter().map(|s| &*s.owner)));
            if let Some(deadline_ms) = deadline {
                waiters.lease_ends(deadline_ms);
            }
            stats::count(&FENCES);
            Ok(RedisValue::Integer(1))
        }
        Fence::TooFarAhead { limit } => Err(errors::token_too_far(token, limit)),
        Fence::Lowers { current } => Err(errors::token_lowers(token, current)),
        Fence::NotHeld => Ok(RedisValue::Integer(0)),
    }
}

/// `DLOCK.FORCERELEASE key` -> 1 if anyone held it, else 0. Removes whatever lock value the key
/// holds, ended or moved ones included.
pub fn force_release(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let mut key = LockKey::open(ctx, &argv[1], true);
    let was_held = key.view(server::now_ms())?.is_held();
    if key.is_empty()? {
        return Ok(RedisValue::Integer(0));
    }
    writes::remove_all(ctx, &mut key, Some(notify::FORCE_RELEASE));
    drop(key);
    if was_held {
        stats::count(&FORCED);
    }
    Waiters::of(ctx, &argv[1]).cleared();
    Ok(RedisValue::Integer(i64::from(was_held)))
}

/// `DLOCK.PROCLAIM key owner token new-owner` -> 1 if `owner` is the plain lock's holder with
/// `token` or a larger one (then `new-owner` holds it: same token, lease and holds), else 0;
/// WRONGKIND for a resource held shared or as a semaphore (OBSERVE's rule). An election's
/// value travels in its owner, so that the queue, the handoff, replication, the RDB and a slot
/// migration carry it with the grant; proclaiming is changing the owner without losing the
/// lock. The grant counts as committed (as after FENCE): a leader proclaims after it was
/// elected.
pub fn proclaim(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let requests::Proclaim {
        owner,
        token,
        new_owner,
    } = requests::proclaim(argv)?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let now_ms = server::now_ms();
    let view = key.view(now_ms)?;
    let holder = view
        .plain_holder()
        .map_err(|kind| errors::plain_only(kind, "DLOCK.PROCLAIM"))?;
    let (held_token, holds, deadline_ms) = match holder {
        // At least the epoch: a node whose grant came late keeps its own larger token (FENCE
        // never lowers one), and must follow the leader's new name too.
        Some(h) if h.owner == owner && h.token >= token => (h.token, h.holds, h.deadline_ms),
        _ => return Ok(RedisValue::Integer(0)),
    };
    if new_owner != owner {
        let who = Owner {
            bytes: new_owner,
            arg: Some(&argv[4]),
        };
        let lease = Lease {
            token: held_token,
            holds,
            deadline_ms,
        };
        writes::replace_holder(ctx, &mut key, who, lease, notify::PROCLAIM)?;
        Waiters::of(ctx, &argv[1]).forget([owner]);
    }
    Ok(RedisValue::Integer(1))
}
