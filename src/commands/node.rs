//! Node-level commands: the fencing counter, and `DLOCK.APPLY` / `DLOCK.RAISE`, the effect
//! forms of lock writes that replicas and the AOF replay.
//!
//! From the node's master or its own AOF they are applied as given (range-checked only). From
//! an ordinary client — possible on servers without internal commands (before Redis 8) — a token
//! must also pass the node's limit, so no client can exhaust or wrap the counter.

use dlock_core::TokenRefused;
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};

use dlock_core::Mode;

use crate::keyspace::codec::Bounds;
use crate::keyspace::compact::Record;
use crate::keyspace::table::{Lease, Slot};
use crate::keyspace::types::arrival_bounds;
use crate::keyspace::LockKey;
use crate::node::node;
use crate::replication::effects;
use crate::server;
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, Arg};

/// `DLOCK.COUNTER` -> the node's fencing counter.
pub fn counter(_ctx: &Context, _argv: &[Arg]) -> RedisResult {
    Ok(RedisValue::Integer(
        i64::try_from(node().counter()).unwrap_or(i64::MAX),
    ))
}

/// `DLOCK.RUNID` -> the server's run id, the one `INFO server` shows. Clients read it on each
/// new connection to tell servers apart (one server reached by two nodes must not count twice);
/// as an @dlock command it needs no INFO, which ACLs file under @dangerous.
pub fn run_id(ctx: &Context, _argv: &[Arg]) -> RedisResult {
    let id = server::run_id(ctx).ok_or_else(errors::no_run_id)?;
    Ok(RedisValue::BulkString(id.to_string()))
}

/// Commands from the master or the AOF are effects this node already agreed to.
fn trusted(ctx: &Context) -> bool {
    let flags = server::context_flags(ctx.ctx);
    server::flag(flags, raw::REDISMODULE_CTX_FLAGS_REPLICATED) || server::is_loading()
}

pub(super) fn accept_token(ctx: &Context, bytes: &[u8]) -> Result<u64, RedisError> {
    let token = args::token(bytes)?;
    if trusted(ctx) {
        return Ok(token);
    }
    node()
        .check_client_token(token)
        .map_err(|TokenRefused::TooFarAhead { limit }| errors::token_too_far(token, limit))
}

/// `DLOCK.RAISE token` -> the counter after raising it to at least `token` (never lowers).
pub fn raise(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let token = accept_token(ctx, argv[1].as_bytes())?;
    let counter = {
        let mut node = node();
        node.raise_counter(token);
        node.counter()
    };
    effects::raise(ctx, counter);
    Ok(RedisValue::Integer(
        i64::try_from(counter).unwrap_or(i64::MAX),
    ))
}

const APPLY_OPTIONS: [OptionSpec; 4] = [
    OptionSpec {
        name: "PXAT",
        takes_value: true,
    },
    OptionSpec {
        name: "EXCLUSIVE",
        takes_value: false,
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

/// `DLOCK.APPLY key owner token holds [PXAT unix-ms] [EXCLUSIVE | SHARED | LIMIT k]` -> OK.
/// Without a mode: the resource becomes this plain lock (replacing whatever the key held).
/// With one: sets that holder of a table (`holds` 0 removes it; PXAT needed), which must still
/// coexist with the others, else nothing changes. Raises the counter to the token. The deadline
/// must be one this node could have granted (see `keyspace::types::arrival_bounds`). Without
/// PXAT (an AOF rewrite of a version-1 lock) the key's TTL, set next, is the deadline.
pub fn apply(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let owner = args::owner(argv[2].as_bytes())?;
    let token = accept_token(ctx, argv[3].as_bytes())?;
    let [pxat, exclusive, shared, limit] =
        args::options(argv[5..].iter().map(Arg::as_bytes), &APPLY_OPTIONS)?;
    let bounds = arrival_bounds(trusted(ctx));
    let deadline = match pxat.flatten() {
        Some(at) => Some(deadline(at, bounds)?),
        None => None,
    };
    if let Some(mode) = holder_mode(exclusive, shared, limit)? {
        let holds = args::holds_or_zero(argv[4].as_bytes())?;
        let deadline_ms = deadline.ok_or_else(errors::apply_needs_pxat)?;
        return apply_holder(ctx, argv, (token, holds, deadline_ms), mode);
    }
    let holds = args::holds(argv[4].as_bytes())?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    key.stored()?; // WRONGTYPE on a key of another type
    let record = Record {
        owner,
        token,
        holds,
        deadline_ms: deadline.unwrap_or(bounds.latest_deadline_ms),
        place: key.place(),
    };
    key.put(&record)?;
    if deadline.is_none() {
        if let Some(mut lock) = key.compact_mut() {
            lock.set_follows_key_ttl(true);
        }
        let db = crate::keyspace::key::selected_db(ctx);
        crate::keyspace::arrivals::note(db, argv[1].as_bytes().to_vec());
    }
    node().raise_counter(token);
    effects::apply(ctx, key.name(), Some(&argv[2]), &record);
    key.changed(crate::keyspace::notify::ACQUIRE);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// A deadline argument within `bounds`.
fn deadline(at: &[u8], bounds: Bounds) -> Result<u64, RedisError> {
    let deadline_ms = args::unix_ms(at)?;
    if deadline_ms > bounds.latest_deadline_ms {
        return Err(errors::deadline_too_far(
            deadline_ms,
            bounds.latest_deadline_ms,
        ));
    }
    Ok(deadline_ms)
}

type Flag<'a> = Option<Option<&'a [u8]>>;

/// The holder mode an APPLY names, and a semaphore's limit (0 for a lock).
fn holder_mode(
    exclusive: Flag<'_>,
    shared: Flag<'_>,
    limit: Flag<'_>,
) -> Result<Option<(Mode, u32)>, RedisError> {
    let given = [exclusive.is_some(), shared.is_some(), limit.is_some()];
    if given.iter().filter(|&&g| g).count() > 1 {
        return Err(errors::shared_and_limit());
    }
    Ok(match (exclusive, shared, limit.flatten()) {
        (Some(_), _, _) => Some((Mode::Exclusive, 0)),
        (_, Some(_), _) => Some((Mode::Shared, 0)),
        (_, _, Some(k)) => Some((Mode::Permit, args::limit(k)?)),
        _ => None,
    })
}

/// One holder of a table set (or removed) as given; the holders must still be able to coexist,
/// else nothing changes. O(log n): no other holder is looked at.
fn apply_holder(
    ctx: &Context,
    argv: &[Arg],
    (token, holds, deadline_ms): (u64, u16, u64),
    (mode, limit): (Mode, u32),
) -> RedisResult {
    let owner = argv[2].as_bytes();
    let mut key = LockKey::open(ctx, &argv[1], true);
    let slot = Slot {
        owner: owner.into(),
        mode,
        lease: Lease {
            token,
            holds,
            deadline_ms,
        },
    };
    if holds > 0 {
        check_upsert(&key, &slot, limit)?;
    }
    let table = key.table_mut(limit)?;
    let changed = match holds {
        0 => table.remove(owner, mode).is_some(),
        _ if table.update(owner, mode, |l| *l = slot.lease) => true,
        _ => table.insert(slot.clone()).is_ok(),
    };
    key.settle()?;
    if holds > 0 {
        node().raise_counter(token);
    }
    if changed {
        effects::apply_holder(ctx, key.name(), &slot, holds, limit);
        key.changed(crate::keyspace::notify::ACQUIRE);
    }
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Whether `slot` may be set in the resource under `key` (replacing the owner's entry in its
/// mode, or joining the others), checked before anything changes.
fn check_upsert(key: &LockKey<'_>, slot: &Slot, limit: u32) -> Result<(), RedisError> {
    key.with_table(limit, |t| t.check_upsert(&slot.owner, slot.mode, limit))?
        .map_err(|why| errors::holders_conflict(&why.to_string()))
}
