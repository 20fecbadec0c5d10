//! Parsing and validating command arguments, free of the Redis API (so they are fuzzed in the
//! tests). Everything is checked before any key is touched: bad input changes nothing.

use dlock_core::holders::{MAX_HOLDS, MAX_LIMIT, MAX_OWNER_LEN};
use dlock_core::Want;
use dlock_core::MAX_TOKEN;
use redis_module::RedisError;

use super::errors;
use super::limits::{LIMIT_MS, OBSERVE_TIMEOUT_MS};

/// A strict Redis integer, as `INCRBY` or `string2ll` accept it: an optional `-`, then digits
/// with no leading zero (`0` itself excepted), within `i64`. No `+`, spaces, decimals, or `-0`.
pub fn integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

fn in_range(bytes: &[u8], min: i64, max: i64) -> Option<u64> {
    integer(bytes)
        .filter(|v| (min..=max).contains(v))
        .map(|v| v as u64)
}

pub fn owner(bytes: &[u8]) -> Result<&[u8], RedisError> {
    if (1..=MAX_OWNER_LEN).contains(&bytes.len()) {
        Ok(bytes)
    } else {
        Err(errors::owner(bytes.len()))
    }
}

/// A TTL in ms from 1 to `max` (`dlock.max-ttl-ms`), named `name` in the error (`ttl-ms`, `PX`).
pub fn ttl_ms(bytes: &[u8], max: i64, name: &str) -> Result<u64, RedisError> {
    in_range(bytes, 1, max).ok_or_else(|| errors::ttl(name, bytes, max))
}

pub fn token(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 1, MAX_TOKEN as i64).ok_or_else(|| errors::token(bytes))
}

pub fn holds(bytes: &[u8]) -> Result<u16, RedisError> {
    in_range(bytes, 1, i64::from(MAX_HOLDS))
        .map(|holds| holds as u16)
        .ok_or_else(|| errors::holds(bytes))
}

/// A hold count in an effect that may remove a holder (0).
pub fn holds_or_zero(bytes: &[u8]) -> Result<u16, RedisError> {
    in_range(bytes, 0, i64::from(MAX_HOLDS))
        .map(|holds| holds as u16)
        .ok_or_else(|| errors::holds(bytes))
}

pub fn unix_ms(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 1, MAX_TOKEN as i64).ok_or_else(|| errors::expiry(bytes))
}

/// `WAIT timeout-ms`: 0 (no limit, as Redis's blocking commands) up to `dlock.max-ttl-ms`'s
/// ceiling.
pub fn wait_timeout_ms(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 0, LIMIT_MS).ok_or_else(|| errors::wait_timeout(bytes))
}

/// `DLOCK.OBSERVE ... AFTER token`: the token last seen, 0 for "no holder".
pub fn observe_after(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 0, MAX_TOKEN as i64).ok_or_else(|| errors::observe_after(bytes))
}

/// `DLOCK.OBSERVE ... OWNER owner`: the owner last seen, empty with `AFTER 0` (no holder).
pub fn owner_or_none(bytes: &[u8]) -> Result<&[u8], RedisError> {
    if bytes.len() <= MAX_OWNER_LEN {
        Ok(bytes)
    } else {
        Err(errors::owner(bytes.len()))
    }
}

/// `DLOCK.OBSERVE ... TIMEOUT ms`: 0 (no limit) to one day.
pub fn observe_timeout_ms(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 0, OBSERVE_TIMEOUT_MS).ok_or_else(|| errors::observe_timeout(bytes))
}

/// `TICKET n`: a positive integer.
pub fn ticket(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 1, i64::MAX).ok_or_else(|| errors::ticket(bytes))
}

/// `LIMIT k`: a semaphore's number of places.
pub fn limit(bytes: &[u8]) -> Result<u32, RedisError> {
    in_range(bytes, 1, i64::from(MAX_LIMIT))
        .map(|limit| limit as u32)
        .ok_or_else(|| errors::limit(bytes))
}

/// What an ACQUIRE asks for from its `SHARED` flag and `LIMIT k` option (at most one of them).
pub fn want(
    shared: Option<Option<&[u8]>>,
    limit: Option<Option<&[u8]>>,
) -> Result<Want, RedisError> {
    match (shared, limit.flatten()) {
        (Some(_), Some(_)) => Err(errors::shared_and_limit()),
        (Some(_), None) => Ok(Want::Shared),
        (None, Some(k)) => Ok(Want::Permit {
            limit: self::limit(k)?,
        }),
        (None, None) => Ok(Want::Exclusive),
    }
}

/// One optional argument a command accepts after its fixed ones: a bare flag or a `NAME value`.
/// The most keys one `DLOCK.TOP` step may visit (and rows it may list): bounds what one call
/// costs the server.
pub const TOP_MAX_COUNT: u64 = 10_000;

/// `DLOCK.TOP ... COUNT n`: 1 to [`TOP_MAX_COUNT`].
pub fn top_count(bytes: &[u8]) -> Result<u64, RedisError> {
    in_range(bytes, 1, TOP_MAX_COUNT as i64).ok_or_else(|| errors::top_count(bytes, TOP_MAX_COUNT))
}

/// `DLOCK.TOP ... CURSOR c`: a SCAN cursor, an unsigned 64-bit integer in decimal (0 starts).
pub fn cursor(bytes: &[u8]) -> Result<u64, RedisError> {
    let digits = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit);
    let canonical = bytes == b"0" || bytes.first() != Some(&b'0');
    std::str::from_utf8(bytes)
        .ok()
        .filter(|_| digits && canonical)
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| errors::cursor(bytes))
}

pub struct OptionSpec {
    pub name: &'static str,
    pub takes_value: bool,
}

/// Trailing options: each at most once, names case-insensitive, values present. Returns, per
/// spec, `None` when absent, `Some(None)` for a flag given, `Some(Some(value))` for a value.
pub fn options<'a, const N: usize>(
    words: impl IntoIterator<Item = &'a [u8]>,
    specs: &[OptionSpec; N],
) -> Result<[Option<Option<&'a [u8]>>; N], RedisError> {
    let mut found = [None; N];
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let index = specs
            .iter()
            .position(|s| word.eq_ignore_ascii_case(s.name.as_bytes()))
            .ok_or_else(|| errors::option(word, &allowed(specs)))?;
        let spec = &specs[index];
        if found[index].is_some() {
            return Err(errors::duplicate_option(spec.name));
        }
        found[index] = Some(if spec.takes_value {
            Some(
                words
                    .next()
                    .ok_or_else(|| errors::missing_value(spec.name))?,
            )
        } else {
            None
        });
    }
    Ok(found)
}

fn allowed(specs: &[OptionSpec]) -> String {
    specs.iter().map(|s| s.name).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
