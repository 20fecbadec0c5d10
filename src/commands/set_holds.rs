//! The owner's commands on a set it holds: `DLOCK.RELEASEALL`, `DLOCK.EXTENDALL`,
//! `DLOCK.FENCEALL`. A set is one hold: EXTENDALL and FENCEALL act on every member or on none,
//! and a set missing a member (DEL, RENAME, expiry, eviction, a wound) is lost as a whole — the
//! node gives back the members still held and answers 0 (docs/multi.md, "one rule").

use dlock_core::node::deadline_at;
use dlock_core::{Fence, Holder, Holders, Mode};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::{notify, LockKey};
use crate::node::node;
use crate::stats::{self, EXTENDS, FENCES, RELEASES};
use crate::waiting::sets as waiting_sets;
use crate::waiting::Waiters;
use crate::wire::args::{self, OptionSpec};
use crate::wire::sets::set_args;
use crate::wire::{errors, Arg};
use crate::writes::{self, Owner};
use crate::{config, server};

/// The members' names and the owner of a set command.
fn members<'a>(
    argv: &'a [Arg],
    command: &str,
    after_owner: usize,
) -> Result<(&'a [Arg], Owner<'a>, usize), RedisError> {
    let at = set_args(argv, command, after_owner)?;
    let owner = Owner {
        bytes: argv[at.owner_at].as_bytes(),
        arg: Some(&argv[at.owner_at]),
    };
    Ok((&argv[2..at.owner_at], owner, at.owner_at))
}

/// `DLOCK.RELEASEALL numkeys key [key ...] owner` -> how many members `owner` held (each
/// released whole). Also withdraws the owner's queued wait on every member.
pub fn release_all(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let (names, owner, _) = members(argv, "dlock.releaseall", 0)?;
    let released = give_back(ctx, names, owner)?;
    waiting_sets::settled(owner.bytes);
    stats::count_n(&RELEASES, released);
    Ok(RedisValue::Integer(
        i64::try_from(released).unwrap_or(i64::MAX),
    ))
}

/// Removes every live entry of `owner` on each member (and its queued wait); returns how many
/// members it held.
fn give_back(ctx: &Context, names: &[Arg], owner: Owner<'_>) -> Result<usize, RedisError> {
    let now_ms = server::now_ms();
    let mut held = 0;
    for name in names {
        let waiters = Waiters::of(ctx, name);
        waiters.withdraw(owner.bytes);
        let mut key = LockKey::open(ctx, name, true);
        let modes = mine(&key, owner.bytes, now_ms);
        if modes.is_empty() {
            continue;
        }
        held += 1;
        let entries: Vec<(&[u8], Mode)> = modes.iter().map(|&m| (owner.bytes, m)).collect();
        let gone = writes::remove(ctx, &mut key, &entries, (notify::RELEASE, now_ms))?;
        drop(key);
        let mine = std::iter::once(owner.bytes);
        waiters.forget(mine.chain(gone.iter().map(|s| &*s.owner)));
        waiters.freed();
    }
    Ok(held)
}

/// The modes of `owner`'s live entries on the key; none when the key holds another type (a
/// member overwritten by another value is a member lost, not an error).
fn mine(key: &LockKey<'_>, owner: &[u8], now_ms: u64) -> Vec<Mode> {
    match key.view(now_ms) {
        Ok(view) => view.mine(owner).iter().map(|h| h.mode).collect(),
        Err(_) => Vec::new(),
    }
}

/// The token `owner` holds every member under, if it holds all of them under one token (a set
/// as granted); `None` when a member is missing: the set is lost.
fn whole_set(ctx: &Context, names: &[Arg], owner: &[u8]) -> Result<Option<u64>, RedisError> {
    let now_ms = server::now_ms();
    let mut token = None;
    for name in names {
        let key = LockKey::open(ctx, name, false);
        let Ok(view) = key.view(now_ms) else {
            return Ok(None); // another type stored there now: the member is lost
        };
        let newest = view.mine(owner).newest().map(|h: Holder<'_>| h.token);
        match (newest, token) {
            (None, _) => return Ok(None),
            (Some(t), Some(seen)) if t != seen => return Ok(None),
            (Some(t), _) => token = Some(t),
        }
    }
    Ok(token)
}

/// The set is lost: the members still held go back, and the reply is 0.
fn lost(ctx: &Context, names: &[Arg], owner: Owner<'_>) -> RedisResult {
    give_back(ctx, names, owner)?;
    waiting_sets::settled(owner.bytes);
    Ok(RedisValue::Integer(0))
}

/// Applies `f` to every entry of `owner` on every member, replicated; `deadline_ms` when the
/// leases move.
/// `committed`: a FENCEALL's commit, after which no wound reaches the set (an EXTENDALL keeps
/// a tentative set tentative).
fn change_all(
    ctx: &Context,
    (names, owner, committed): (&[Arg], Owner<'_>, bool),
    (event, deadline_ms): (&std::ffi::CStr, Option<u64>),
    f: impl Fn(&mut crate::keyspace::Lease),
) -> Result<(), RedisError> {
    let now_ms = server::now_ms();
    for name in names {
        let mut key = LockKey::open(ctx, name, true);
        let modes = mine(&key, owner.bytes, now_ms);
        let gone = writes::change(ctx, &mut key, (owner, &modes), (event, now_ms), &f)?;
        let waiters = Waiters::of(ctx, name);
        let mine = committed.then_some(owner.bytes);
        waiters.forget(mine.into_iter().chain(gone.iter().map(|s| &*s.owner)));
        if let Some(deadline_ms) = deadline_ms {
            waiters.lease_ends(deadline_ms);
        }
    }
    Ok(())
}

/// `DLOCK.EXTENDALL numkeys key [key ...] owner ttl-ms` -> 1 if `owner` holds every member
/// (all get the new deadline), else 0 and the members still held are released.
pub fn extend_all(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let (names, owner, at) = members(argv, "dlock.extendall", 1)?;
    let ttl_ms = args::ttl_ms(argv[at + 1].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    if whole_set(ctx, names, owner.bytes)?.is_none() {
        return lost(ctx, names, owner);
    }
    let deadline_ms = deadline_at(server::now_ms(), ttl_ms);
    change_all(
        ctx,
        (names, owner, false),
        (notify::EXTEND, Some(deadline_ms)),
        |l| l.deadline_ms = deadline_ms,
    )?;
    stats::count(&EXTENDS);
    Ok(RedisValue::Integer(1))
}

const FENCE_OPTIONS: [OptionSpec; 1] = [OptionSpec {
    name: "PX",
    takes_value: true,
}];

/// `DLOCK.FENCEALL numkeys key [key ...] owner token [PX ttl-ms]` -> 1 if `owner` holds every
/// member (each takes the token, never lowered; the counter rises to it; PX resets the leases),
/// else 0 and the members still held are released. Commits the set: no wound reaches it after.
pub fn fence_all(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let (names, owner, at) = members(argv, "dlock.fenceall", 1)?;
    let token = args::token(argv[at + 1].as_bytes())?;
    let [px] = args::options(argv[at + 2..].iter().map(Arg::as_bytes), &FENCE_OPTIONS)?;
    let ttl_ms = px
        .flatten()
        .map(|ttl| args::ttl_ms(ttl, config::max_ttl_ms(), "PX"))
        .transpose()?;
    let Some(held) = whole_set(ctx, names, owner.bytes)? else {
        return lost(ctx, names, owner);
    };
    let newest = dlock_core::Holder {
        owner: owner.bytes,
        mode: Mode::Exclusive,
        token: held,
        holds: 1,
        deadline_ms: u64::MAX,
    };
    let token = match node().fence(Some(newest), owner.bytes, token) {
        Fence::Fenced { token } => token,
        Fence::TooFarAhead { limit } => return Err(errors::token_too_far(token, limit)),
        Fence::Lowers { current } => return Err(errors::token_lowers(token, current)),
        Fence::NotHeld => return lost(ctx, names, owner),
    };
    let deadline = ttl_ms.map(|ttl| deadline_at(server::now_ms(), ttl));
    change_all(ctx, (names, owner, true), (notify::FENCE, deadline), |l| {
        l.token = token;
        l.deadline_ms = deadline.unwrap_or(l.deadline_ms);
    })?;
    waiting_sets::settled(owner.bytes);
    stats::count(&FENCES);
    Ok(RedisValue::Integer(1))
}
