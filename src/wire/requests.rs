//! Whole requests of the commands whose arguments nest or combine — GUARD (a command inside a
//! command), OBSERVE (options that depend on each other), PROCLAIM — parsed from their bytes
//! alone: the command layer calls these with Redis's arguments, the unit tests and the in-process
//! fuzz targets (`fuzz/`, `make fuzz`) with any bytes at all. Each checks everything before the
//! command touches a key.

use redis_module::RedisError;

use super::args::{self, OptionSpec};
use super::errors;

/// Where the wrapped command starts in a GUARD's arguments.
pub const WRAPPED_AT: usize = 3;

/// `DLOCK.GUARD gate token command [arg ...]` (its name first) -> the token; the gate is any
/// key name and the wrapped command is judged by [`asks_wrapped_keys`], [`spells_gate`] and,
/// when it runs, by Redis's flags for it.
pub fn guard<A: AsRef<[u8]>>(argv: &[A]) -> Result<u64, RedisError> {
    let [_, _gate, token, _command, ..] = argv else {
        return Err(errors::arity("dlock.guard"));
    };
    args::token(token.as_ref())
}

/// `DLOCK.*` in any case: never run inside a GUARD.
pub fn is_dlock_command(name: &[u8]) -> bool {
    name.get(..6)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"dlock."))
}

/// Whether a GUARD's key extraction asks Redis for its wrapped command's keys. Not for a wrapped
/// `DLOCK.*` command (refused when the GUARD runs, whatever its keys), and not while the keys of
/// a GUARD are being asked already: asking calls back into the module when the wrapped command
/// is a GUARD, or another module's command that wraps one, and unbounded nesting would recurse
/// until the stack overflows.
pub fn asks_wrapped_keys<A: AsRef<[u8]>>(argv: &[A], asking: bool) -> bool {
    argv.get(WRAPPED_AT)
        .is_some_and(|name| !asking && !is_dlock_command(name.as_ref()))
}

/// The wrapped command's key positions (`at` within the wrapped command, its name at 0) as
/// positions in the GUARD's arguments (`argc` of them); any outside them is dropped.
pub fn declared(wrapped: &[(usize, i32)], argc: usize) -> impl Iterator<Item = (usize, i32)> + '_ {
    wrapped
        .iter()
        .filter_map(move |&(at, flags)| Some((at.checked_add(WRAPPED_AT)?, flags)))
        .filter(move |&(at, _)| at < argc)
}

/// Whether any argument of the wrapped command (after its name) spells the gate: only then can
/// it touch the gate, and only then are its keys asked at run time.
pub fn spells_gate<A: AsRef<[u8]>>(argv: &[A]) -> bool {
    let gate = argv.get(1).map(AsRef::as_ref);
    argv.get(WRAPPED_AT + 1..)
        .unwrap_or_default()
        .iter()
        .any(|a| Some(a.as_ref()) == gate)
}

const OBSERVE_OPTIONS: [OptionSpec; 3] = [
    OptionSpec {
        name: "AFTER",
        takes_value: true,
    },
    OptionSpec {
        name: "OWNER",
        takes_value: true,
    },
    OptionSpec {
        name: "TIMEOUT",
        takes_value: true,
    },
];

/// `DLOCK.OBSERVE key [AFTER token] [OWNER owner] [TIMEOUT ms]`.
pub struct Observe<'a> {
    /// The token the client saw (0: no holder) and the owner with it, if it says; `None` asks
    /// for the state at once.
    pub after: Option<(u64, Option<&'a [u8]>)>,
    /// The client's own limit on the wait (0: none).
    pub timeout_ms: u64,
}

pub fn observe<A: AsRef<[u8]>>(argv: &[A]) -> Result<Observe<'_>, RedisError> {
    if argv.len() < 2 {
        return Err(errors::arity("dlock.observe"));
    }
    let options = argv[2..].iter().map(AsRef::as_ref);
    let [after, owner, timeout] = args::options(options, &OBSERVE_OPTIONS)?;
    let token = after.flatten().map(args::observe_after).transpose()?;
    let owner = owner.flatten().map(args::owner_or_none).transpose()?;
    let after = match (token, owner) {
        (Some(token), owner) => Some((token, owner)),
        (None, None) => None,
        (None, Some(_)) => return Err(errors::owner_needs_after()),
    };
    let timeout_ms = timeout
        .flatten()
        .map(args::observe_timeout_ms)
        .transpose()?;
    Ok(Observe {
        after,
        timeout_ms: timeout_ms.unwrap_or(0),
    })
}

/// `DLOCK.PROCLAIM key owner token new-owner`.
pub struct Proclaim<'a> {
    pub owner: &'a [u8],
    pub token: u64,
    pub new_owner: &'a [u8],
}

pub fn proclaim<A: AsRef<[u8]>>(argv: &[A]) -> Result<Proclaim<'_>, RedisError> {
    let [_, _, owner, token, new_owner] = argv else {
        return Err(errors::arity("dlock.proclaim"));
    };
    Ok(Proclaim {
        owner: args::owner(owner.as_ref())?,
        token: args::token(token.as_ref())?,
        new_owner: args::owner(new_owner.as_ref())?,
    })
}

#[cfg(test)]
#[path = "requests_tests.rs"]
mod tests;
