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
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};

use super::wrapped::{self, Wrapped};
use crate::keyspace::gate::{self, Gate};
use crate::keyspace::key::selected_db;
use crate::keyspace::{notify, place};
use crate::node::node;
use crate::replication::effects;
use crate::stats::{self, EVICTION_REFUSALS};
use crate::wire::{args, errors, Arg};
use crate::{config, server};

/// `DLOCK.GUARD gate token command [arg ...]` -> the command's reply; `STALE ...` (nothing
/// changed) when `token` is below the gate's.
pub fn guard(ctx: &Context, argv: &[Arg]) -> RedisResult {
    if wrapped::keys_request(ctx) {
        wrapped::declare_keys(ctx, argv);
        return Ok(RedisValue::NoReply);
    }
    let token = args::token(argv[2].as_bytes())?;
    let command = Wrapped::checked(ctx, &argv[3..], &argv[1])?;
    let flags = server::context_flags(ctx.ctx);
    if server::may_evict(flags) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        return Err(errors::eviction(&server::eviction_policy(ctx)));
    }
    let here = place(selected_db(ctx), argv[1].as_bytes());
    let current = read(ctx, &argv[1])?.map(|g| g.at(here));
    if let Some(gate) = current.filter(|g| !dlock_core::gate::admits(Some(g.token), token)) {
        return Err(errors::stale(token, gate.token));
    }
    let risen = Gate {
        token: dlock_core::gate::raised(current.map(|g| g.token), token),
        place: here,
    };
    let rises = current != Some(risen);
    if rises {
        within_limit(token)?; // a rise carries the node counter with it
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
    let here = place(selected_db(ctx), argv[1].as_bytes());
    let current = read(ctx, &argv[1])?.map(|g| g.at(here).token);
    Ok(RedisValue::Integer(i64::from(dlock_core::gate::admits(
        current, token,
    ))))
}

/// `DLOCK.RAISEGATE gate token` -> OK: the gate stands at least at `token`, and the counter
/// rises to it. The effect of a GUARD; from a client (servers without internal commands) the
/// token must pass the node's limit.
pub fn raise_gate(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let token = super::node::accept_token(ctx, argv[2].as_bytes())?;
    let here = place(selected_db(ctx), argv[1].as_bytes());
    // As given: a replica applies its master's rise, whatever carried the gate here.
    let stored = read(ctx, &argv[1])?.map(|g| g.token);
    let risen = Gate {
        token: dlock_core::gate::raised(stored, token),
        place: here,
    };
    store(ctx, &argv[1], risen)?;
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// A token a client sent is within what this node accepts (not far ahead of its clock).
fn within_limit(token: u64) -> Result<(), RedisError> {
    node()
        .check_client_token(token)
        .map(drop)
        .map_err(|TokenRefused::TooFarAhead { limit }| errors::token_too_far(token, limit))
}

/// The gate under `name`, if any (WRONGTYPE for another value).
fn read(ctx: &Context, name: &Arg) -> Result<Option<Gate>, RedisError> {
    let key = OpenKey::open(ctx, name, raw::REDISMODULE_READ);
    key.0.map_or(Ok(None), gate::read)
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
