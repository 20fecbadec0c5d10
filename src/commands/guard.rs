//! Guarded writes: `DLOCK.GUARD gate token command [arg ...]` runs `command` only for a token
//! at least as high as any its gate has seen, and raises the gate to it; `DLOCK.CHECK gate
//! token` asks the same question and changes nothing; `DLOCK.RAISEGATE gate token` is the
//! effect a GUARD replicates (see [`crate::keyspace::gate`]).
//!
//! The wrapped command runs through `RedisModule_Call` as the calling client's user (its ACL
//! applies to the command and its keys), its errors returned as replies, refused when the server
//! is out of memory and it would add data, and replicated as itself; the gate's rise goes out
//! with it (Redis wraps a command's effects in MULTI/EXEC), so a replica and an AOF replay end in
//! the same state. The keys are declared through the getkeys API: the gate, then the wrapped
//! command's own, so `COMMAND GETKEYS`, ACL key patterns and Cluster routing (`CROSSSLOT`) see
//! them all.

use std::os::raw::c_int;
use std::ptr::NonNull;

use dlock_core::TokenRefused;
use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};

use super::wrapped::{self, Wrapped};
use crate::keyspace::gate::{self, Gate};
use crate::keyspace::places::place;
use crate::keyspace::{ghosts, notify};
use crate::node::node;
use crate::replication::effects;
use crate::server::selected_db;
use crate::stats::{self, EVICTION_REFUSALS};
use crate::wire::{args, errors, requests, Arg};
use crate::{config, server};

/// `DLOCK.GUARD gate token command [arg ...]` -> the command's reply; `STALE ...` (nothing
/// changed) when `token` is below the gate's.
pub fn guard(ctx: &Context, argv: &[Arg]) -> RedisResult {
    if wrapped::keys_request(ctx) {
        wrapped::declare_keys(ctx, argv);
        return Ok(RedisValue::NoReply);
    }
    let token = requests::guard(argv)?;
    let command = Wrapped::checked(ctx, argv)?;
    let flags = server::context_flags(ctx.ctx);
    if server::may_evict(flags) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        return Err(errors::eviction(&server::eviction_policy(ctx)));
    }
    let standing = Standing::read(ctx, &argv[1])?;
    if let Some(gate) = standing
        .current
        .filter(|g| !dlock_core::gate::admits(Some(g.token), token))
    {
        return Err(errors::stale(token, gate.token));
    }
    let risen = standing.raised_to(token);
    let rises = standing.stored != Some(risen);
    if rises {
        within_limit(token)?; // a rise carries the node counter with it
        standing.may_create(flags)?;
    }
    let reply = command.call(ctx)?;
    if rises && !reply.is_error() {
        store(ctx, &argv[1], risen)?;
    }
    reply.send(ctx);
    Ok(RedisValue::NoReply)
}

/// `DLOCK.CHECK gate token` -> 1 if a GUARD with `token` would pass the gate now, else 0.
pub fn check(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let token = args::token(argv[2].as_bytes())?;
    let current = Standing::read(ctx, &argv[1])?.current.map(|g| g.token);
    Ok(RedisValue::Integer(i64::from(dlock_core::gate::admits(
        current, token,
    ))))
}

/// `DLOCK.RAISEGATE gate token` -> OK: the gate stands at least at `token`, and the counter
/// rises to it. The effect of a GUARD; from a client (servers without internal commands) the
/// token must pass the node's limit, and a new gate needs memory.
pub fn raise_gate(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let token = super::node::accept_token(ctx, argv[2].as_bytes())?;
    let flags = server::context_flags(ctx.ctx);
    let standing = Standing::read(ctx, &argv[1])?;
    // From the master or the AOF, as given: the rise was decided where the gate stood as the
    // master saw it, and applying it here ends in the same value.
    let effect = server::flag(flags, raw::REDISMODULE_CTX_FLAGS_REPLICATED) || server::is_loading();
    let risen = match effect {
        true => Gate {
            token: dlock_core::gate::raised(standing.stored.map(|g| g.token), token),
            place: standing.here,
        },
        false => standing.raised_to(token),
    };
    if !effect {
        standing.may_create(flags)?;
    }
    store(ctx, &argv[1], risen)?;
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// A gate as one command finds it.
struct Standing {
    /// Where the gate's key is ([`place`]).
    here: u64,
    /// The gate stored under the key, as stored.
    stored: Option<Gate>,
    /// What it stands at: the stored gate read at its key, else the gate that expired or was
    /// evicted there and is not back yet ([`ghosts`]).
    current: Option<Gate>,
}

impl Standing {
    fn read(ctx: &Context, name: &Arg) -> Result<Standing, RedisError> {
        let db = selected_db(ctx);
        let here = place(db, name.as_bytes());
        let key = OpenKey::open(ctx, name, raw::REDISMODULE_READ);
        let stored = key.0.map_or(Ok(None), gate::read)?;
        let current = match stored {
            Some(gate) => Some(gate.at(here)),
            None => ghosts::ghost(db, name.as_bytes()).map(|token| Gate { token, place: here }),
        };
        Ok(Standing {
            here,
            stored,
            current,
        })
    }

    /// The gate after a write under `token` (at home under its key).
    fn raised_to(&self, token: u64) -> Gate {
        Gate {
            token: dlock_core::gate::raised(self.current.map(|g| g.token), token),
            place: self.here,
        }
    }

    /// A new gate takes memory: refused over `maxmemory`, as a client's SET would be.
    fn may_create(&self, flags: std::os::raw::c_int) -> Result<(), RedisError> {
        match self.stored.is_none() && server::flag(flags, raw::REDISMODULE_CTX_FLAGS_OOM) {
            true => Err(errors::out_of_memory()),
            false => Ok(()),
        }
    }
}

/// A token a client sent is within what this node accepts (not far ahead of its clock).
fn within_limit(token: u64) -> Result<(), RedisError> {
    node()
        .check_client_token(token)
        .map(drop)
        .map_err(|TokenRefused::TooFarAhead { limit }| errors::token_too_far(token, limit))
}

/// Stores `gate` under `name`, raises the counter to it, replicates the rise, tells watchers.
fn store(ctx: &Context, name: &Arg, risen: Gate) -> Result<(), RedisError> {
    let key = OpenKey::open(ctx, name, raw::REDISMODULE_READ | raw::REDISMODULE_WRITE);
    let handle = key.0.ok_or_else(errors::cannot_store)?;
    gate::set(handle, risen)?;
    drop(key);
    node().raise_counter(risen.token);
    effects::raise_gate(ctx, name, risen.token);
    notify::changed(ctx, name, notify::GATE);
    Ok(())
}

/// Stores again a gate that was evicted ([`ghosts`]), from their timer: under its
/// key, unless something was stored there since (a gate at least as high, or another value,
/// which is an overwrite, as `SET` over a gate is).
pub fn revive(ctx: &Context, db: i32, name: &[u8], token: u64) {
    let Some(select) = crate::api!(RedisModule_SelectDb) else {
        return;
    };
    // SAFETY: the timer's context.
    if unsafe { select(ctx.ctx, db) } != raw::REDISMODULE_OK as std::os::raw::c_int {
        return;
    }
    let string = RedisString::create_from_slice(ctx.ctx, name);
    let name = Arg::new(string.inner);
    let stored = OpenKey::open(ctx, &name, raw::REDISMODULE_READ)
        .0
        .map_or(Ok(None), gate::read);
    if matches!(stored, Ok(None)) || matches!(stored, Ok(Some(g)) if g.token < token) {
        let here = place(db, name.as_bytes());
        if store(ctx, &name, Gate { token, place: here }).is_ok() {
            stats::count(&stats::GATES_REVIVED);
        }
    }
}

/// An open key, closed on drop.
struct OpenKey(Option<NonNull<raw::RedisModuleKey>>);

impl OpenKey {
    fn open(ctx: &Context, name: &Arg, mode: u32) -> OpenKey {
        OpenKey(crate::api!(RedisModule_OpenKey).and_then(|open| {
            // SAFETY: the running command's context and one of its arguments.
            NonNull::new(unsafe { open(ctx.ctx, name.as_ptr(), mode as c_int) })
        }))
    }
}

impl Drop for OpenKey {
    fn drop(&mut self) {
        if let (Some(key), Some(close)) = (self.0, crate::api!(RedisModule_CloseKey)) {
            // SAFETY: opened by `open`, closed once.
            unsafe { close(key.as_ptr()) };
        }
    }
}
