//! Parsing and validating command arguments. Everything is checked before any key is touched,
//! so bad input changes nothing.

use redis_module::{RedisError, RedisString};

use crate::config;
use crate::errors;
use crate::lock::{MAX_HOLDS, MAX_OWNER_LEN, MAX_TOKEN};

/// Checks the argument count (including the command name) against `min..=max`.
pub fn arity(
    args: &[RedisString],
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

pub fn owner(arg: &RedisString) -> Result<&[u8], RedisError> {
    let owner = arg.as_slice();
    if (1..=MAX_OWNER_LEN).contains(&owner.len()) {
        Ok(owner)
    } else {
        Err(errors::owner(owner.len()))
    }
}

pub fn ttl_ms(arg: &RedisString) -> Result<u64, RedisError> {
    let max = config::max_ttl_ms();
    in_range(arg, 1, max).ok_or_else(|| errors::ttl(arg.as_slice(), max))
}

pub fn token(arg: &RedisString) -> Result<u64, RedisError> {
    in_range(arg, 1, MAX_TOKEN as i64).ok_or_else(|| errors::token(arg.as_slice()))
}

pub fn holds(arg: &RedisString) -> Result<u16, RedisError> {
    in_range(arg, 1, i64::from(MAX_HOLDS))
        .map(|holds| holds as u16)
        .ok_or_else(|| errors::holds(arg.as_slice()))
}

pub fn unix_ms(arg: &RedisString) -> Result<u64, RedisError> {
    in_range(arg, 1, MAX_TOKEN as i64).ok_or_else(|| errors::expiry(arg.as_slice()))
}

/// Whether the optional flag `name` is present (case-insensitive); anything else is an error.
pub fn flag(arg: Option<&RedisString>, name: &str) -> Result<bool, RedisError> {
    match arg {
        None => Ok(false),
        Some(arg) if arg.as_slice().eq_ignore_ascii_case(name.as_bytes()) => Ok(true),
        Some(arg) => Err(errors::option(arg.as_slice(), name)),
    }
}

/// A strict Redis integer (no spaces, no `+`, no decimals) within `min..=max`.
fn in_range(arg: &RedisString, min: i64, max: i64) -> Option<u64> {
    let value = arg.parse_integer().ok()?;
    (min..=max).contains(&value).then_some(value as u64)
}
