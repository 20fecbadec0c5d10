//! Every error string a client can see, in one place. Each names the argument and the allowed
//! range, and starts with a Redis error code (`ERR`, `WRONGTYPE`, `TRYAGAIN`).

use redis_module::RedisError;

use crate::lock::{MAX_HOLDS, MAX_OWNER_LEN, MAX_TOKEN};

fn err(message: String) -> RedisError {
    RedisError::String(message)
}

pub fn arity(command: &str, usage: &str) -> RedisError {
    err(format!(
        "ERR wrong number of arguments for '{command}' command, expected: {command} {usage}"
    ))
}

pub fn ttl(got: &[u8], max_ttl_ms: i64) -> RedisError {
    err(format!(
        "ERR ttl-ms must be an integer from 1 to {max_ttl_ms} (dlock.max-ttl-ms), got '{}'",
        shown(got)
    ))
}

pub fn owner(len: usize) -> RedisError {
    err(format!(
        "ERR owner must be 1 to {MAX_OWNER_LEN} bytes, got {len} bytes"
    ))
}

pub fn token(got: &[u8]) -> RedisError {
    err(format!(
        "ERR token must be an integer from 1 to {MAX_TOKEN}, got '{}'",
        shown(got)
    ))
}

pub fn expiry(got: &[u8]) -> RedisError {
    err(format!(
        "ERR PXAT must be a unix time in milliseconds from 1 to {MAX_TOKEN}, got '{}'",
        shown(got)
    ))
}

pub fn holds(got: &[u8]) -> RedisError {
    err(format!(
        "ERR holds must be an integer from 1 to {MAX_HOLDS}, got '{}'",
        shown(got)
    ))
}

pub fn option(got: &[u8], allowed: &str) -> RedisError {
    err(format!(
        "ERR unknown option '{}', allowed: {allowed}",
        shown(got)
    ))
}

pub fn hold_limit() -> RedisError {
    err(format!(
        "ERR reentrant hold count is already at its maximum of {MAX_HOLDS}"
    ))
}

pub fn quarantined(ms_left: u64) -> RedisError {
    err(format!(
        "TRYAGAIN dlock is in restart quarantine for {ms_left} more ms (dlock.quarantine-ms): no new grants yet"
    ))
}

pub fn wrong_type() -> RedisError {
    RedisError::WrongType
}

pub fn counter_subcommand(got: &[u8]) -> RedisError {
    err(format!(
        "ERR unknown DLOCK.COUNTER subcommand '{}', allowed: RAISE token",
        shown(got)
    ))
}

/// At most 64 bytes of what the client sent, escaped to printable ASCII (`\xff`, `\n`), so an
/// error stays one short line that every client can decode.
fn shown(got: &[u8]) -> String {
    let cut = &got[..got.len().min(64)];
    cut.escape_ascii().to_string()
}
