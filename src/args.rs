//! Parsing and validating command arguments. Everything is checked before any key is touched,
//! so bad input changes nothing.

use redis_module::RedisError;

use crate::argv::Arg;

use crate::config;
use crate::errors;
use crate::lock::{MAX_HOLDS, MAX_OWNER_LEN, MAX_TOKEN};

/// Checks the argument count (including the command name) against `min..=max`.
pub fn arity(
    args: &[Arg],
    min: usize,
    max: usize,
    name: &str,
    usage: &str,
) -> Result<(), RedisError> {
    if (min..=max).contains(&args.len()) {
        Ok(())
    } else {
        Err(errors::arity(name, usage))
    }
}

pub fn owner(arg: &Arg) -> Result<&[u8], RedisError> {
    let owner = arg.as_bytes();
    if (1..=MAX_OWNER_LEN).contains(&owner.len()) {
        Ok(owner)
    } else {
        Err(errors::owner(owner.len()))
    }
}

pub fn ttl_ms(arg: &Arg) -> Result<u64, RedisError> {
    let max = config::max_ttl_ms();
    in_range(arg, 1, max).ok_or_else(|| errors::ttl(arg.as_bytes(), max))
}

pub fn token(arg: &Arg) -> Result<u64, RedisError> {
    in_range(arg, 1, MAX_TOKEN as i64).ok_or_else(|| errors::token(arg.as_bytes()))
}

pub fn holds(arg: &Arg) -> Result<u16, RedisError> {
    in_range(arg, 1, i64::from(MAX_HOLDS))
        .map(|holds| holds as u16)
        .ok_or_else(|| errors::holds(arg.as_bytes()))
}

pub fn unix_ms(arg: &Arg) -> Result<u64, RedisError> {
    in_range(arg, 1, MAX_TOKEN as i64).ok_or_else(|| errors::expiry(arg.as_bytes()))
}

/// Whether the optional flag `name` is present (case-insensitive); anything else is an error.
pub fn flag(arg: Option<&Arg>, name: &str) -> Result<bool, RedisError> {
    match arg {
        None => Ok(false),
        Some(arg) if arg.as_bytes().eq_ignore_ascii_case(name.as_bytes()) => Ok(true),
        Some(arg) => Err(errors::option(arg.as_bytes(), name)),
    }
}

/// A strict Redis integer (no spaces, no `+`, no decimals) within `min..=max`.
fn in_range(arg: &Arg, min: i64, max: i64) -> Option<u64> {
    let value = arg.integer()?;
    (min..=max).contains(&value).then_some(value as u64)
}
