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
use crate::keyspace::edit::Edit;
use crate::keyspace::rdb::arrival_bounds;
use crate::keyspace::{arrivals, notify, Lease, LockKey, Slot};
use crate::node::node;
use crate::replication::effects::{self, Apply, Scope};
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
/// Without a mode: the resource becomes this one exclusive holder (replacing whatever the key
/// held). With one: sets that holder (`holds` 0 removes it; PXAT needed), which must still
/// coexist with the others, else nothing changes. Raises the counter to the token. The deadline
/// must be one this node could have granted (see `keyspace::rdb::arrival_bounds`). Without
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
    let scope = holder_mode(exclusive, shared, limit)?;
    let holds = match scope {
        Scope::Sole => args::holds(argv[4].as_bytes())?,
        Scope::Holder { .. } => args::holds_or_zero(argv[4].as_bytes())?,
    };
    let deadline_ms = match (scope, deadline) {
        (_, Some(at)) => at,
        (Scope::Sole, None) => bounds.latest_deadline_ms,
        (Scope::Holder { .. }, None) => return Err(errors::apply_needs_pxat()),
    };
    let lease = Lease {
        token,
        holds,
        deadline_ms,
    };
    let mut key = LockKey::open(ctx, &argv[1], true);
    let changed = match scope {
        Scope::Sole => set_sole(ctx, &mut key, owner, lease, deadline.is_none())?,
        Scope::Holder { mode, limit } => set_holder(&mut key, owner, (mode, limit), lease)?,
    };
    if holds > 0 {
        node().raise_counter(token);
    }
    if changed {
        let change = Apply {
            owner,
            owner_arg: Some(&argv[2]),
            lease,
            scope,
        };
        effects::apply(ctx, server::context_flags(ctx.ctx), key.name(), &change);
        // Named after the effect: a holder gone is a release (the master said so too).
        key.changed(if holds == 0 {
            notify::RELEASE
        } else {
            notify::ACQUIRE
        });
    }
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// The resource under `key` becomes this one holder. Without a deadline of its own it follows
/// the key's TTL, set next by the AOF, once that is known.
fn set_sole(
    ctx: &Context,
    key: &mut LockKey<'_>,
    owner: &[u8],
    lease: Lease,
    follows_key_ttl: bool,
) -> Result<bool, RedisError> {
    key.counted_limit()?; // WRONGTYPE on a key of another type
    key.put_sole(owner, lease)?;
    if follows_key_ttl {
        key.follow_key_ttl();
        arrivals::note(server::selected_db(ctx), key.name().as_bytes().to_vec());
    }
    Ok(true)
}

/// One holder set (or removed) as given; the holders must still be able to coexist, else
/// nothing changes. O(log n): no other holder is looked at. Whether anything changed.
fn set_holder(
    key: &mut LockKey<'_>,
    owner: &[u8],
    (mode, limit): (Mode, u32),
    lease: Lease,
) -> Result<bool, RedisError> {
    let slot = Slot {
        owner: owner.into(),
        mode,
        lease,
    };
    if lease.holds > 0 {
        // Checked before anything changes.
        key.check_set(&slot, limit)?
            .map_err(|why| errors::holders_conflict(&why.to_string()))?;
    }
    let mut edit = Edit::open(key, Some(limit))?;
    let changed = match lease.holds {
        0 => edit.remove(owner, mode)?.is_some(),
        _ => {
            edit.set(slot)?;
            true
        }
    };
    edit.finish()?;
    Ok(changed)
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

/// What an APPLY sets: the whole resource (no mode given), or one holder in the mode it names
/// (a semaphore's limit, 0 for a lock).
fn holder_mode(
    exclusive: Flag<'_>,
    shared: Flag<'_>,
    limit: Flag<'_>,
) -> Result<Scope, RedisError> {
    let given = [exclusive.is_some(), shared.is_some(), limit.is_some()];
    if given.iter().filter(|&&g| g).count() > 1 {
        return Err(errors::apply_modes());
    }
    let holder = |mode, limit| Scope::Holder { mode, limit };
    Ok(match (exclusive, shared, limit.flatten()) {
        (Some(_), _, _) => holder(Mode::Exclusive, 0),
        (_, Some(_), _) => holder(Mode::Shared, 0),
        (_, _, Some(k)) => holder(Mode::Permit, args::limit(k)?),
        _ => Scope::Sole,
    })
}
