//! Every error string a client can see, in one place. Each starts with a Redis error code
//! (`ERR`, `WRONGTYPE`, `TRYAGAIN`) and names the argument and what is allowed.

use dlock_core::holders::{MAX_HOLDS, MAX_LIMIT, MAX_OWNER_LEN};
use dlock_core::MAX_TOKEN;
use dlock_core::{Kind, Want};
use redis_module::RedisError;

use super::limits::{LIMIT_MS, OBSERVE_TIMEOUT_MS};

fn err(message: String) -> RedisError {
    RedisError::String(message)
}

/// The same words Redis uses for its own commands.
pub fn arity(command: &str) -> RedisError {
    err(format!(
        "ERR wrong number of arguments for '{command}' command"
    ))
}

pub fn ttl(name: &str, got: &[u8], max_ttl_ms: i64) -> RedisError {
    err(format!(
        "ERR {name} must be an integer from 1 to {max_ttl_ms} (dlock.max-ttl-ms), got '{}'",
        shown(got)
    ))
}

/// `DLOCK.RUNID` on a server that gives modules no `INFO server` fields.
pub fn no_run_id() -> RedisError {
    err("ERR this server gives modules no run_id".to_string())
}

pub fn top_count(got: &[u8], max: u64) -> RedisError {
    err(format!(
        "ERR COUNT must be an integer from 1 to {max}, got '{}'",
        shown(got)
    ))
}

pub fn cursor(got: &[u8]) -> RedisError {
    err(format!(
        "ERR CURSOR must be a cursor DLOCK.TOP returned (an unsigned integer, 0 to start), got '{}'",
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

pub fn token_too_far(token: u64, limit: u64) -> RedisError {
    err(format!(
        "ERR token {token} is beyond what this node accepts ({limit}: its counter, or its clock plus one year)"
    ))
}

pub fn token_lowers(token: u64, current: u64) -> RedisError {
    err(format!(
        "ERR token {token} is below the lock's token {current}: FENCE never lowers a token"
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

pub fn duplicate_option(name: &str) -> RedisError {
    err(format!("ERR option {name} given more than once"))
}

pub fn missing_value(name: &str) -> RedisError {
    err(format!("ERR option {name} needs a value"))
}

pub fn wait_timeout(got: &[u8]) -> RedisError {
    err(format!(
        "ERR WAIT must be a timeout in ms from 0 (no limit) to {}, got '{}'",
        LIMIT_MS,
        shown(got)
    ))
}

pub fn observe_after(got: &[u8]) -> RedisError {
    err(format!(
        "ERR AFTER must be a token from 0 (no holder) to {MAX_TOKEN}, got '{}'",
        shown(got)
    ))
}

pub fn owner_needs_after() -> RedisError {
    RedisError::Str("ERR OWNER names the owner seen with the token of AFTER: give AFTER too")
}

pub fn observe_timeout(got: &[u8]) -> RedisError {
    err(format!(
        "ERR TIMEOUT must be a timeout in ms from 0 (no limit) to {OBSERVE_TIMEOUT_MS} (one day), got '{}'",
        shown(got)
    ))
}

pub fn ticket(got: &[u8]) -> RedisError {
    err(format!(
        "ERR TICKET must be an integer from 1 to {}, got '{}'",
        i64::MAX,
        shown(got)
    ))
}

pub fn ticket_needs_wait() -> RedisError {
    err("ERR TICKET needs WAIT: a ticket orders waiters".to_string())
}

pub fn too_many_waiters(limit: usize) -> RedisError {
    err(format!(
        "ERR too many clients wait for this lock already (dlock.max-waiters is {limit})"
    ))
}

pub fn cannot_block() -> RedisError {
    err("ERR this server cannot park the client".to_string())
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

pub fn exhausted() -> RedisError {
    err(format!(
        "ERR the fencing counter reached its maximum ({MAX_TOKEN}): this node can grant no more locks"
    ))
}

pub fn eviction(policy: &str) -> RedisError {
    err(format!(
        "ERR dlock refuses new locks: maxmemory-policy {policy} can evict lock keys; set maxmemory-policy noeviction, or dlock.allow-eviction yes to accept the risk"
    ))
}

/// Redis's own words for a write refused over `maxmemory`.
pub fn out_of_memory() -> RedisError {
    err("OOM command not allowed when used memory > 'maxmemory'.".to_string())
}

pub fn cannot_store() -> RedisError {
    err("ERR dlock could not store the lock".to_string())
}

pub fn cannot_scan() -> RedisError {
    err("ERR dlock could not read the keyspace (SCAN failed)".to_string())
}

pub fn wrong_type() -> RedisError {
    RedisError::WrongType
}

/// At most 64 bytes of what the client sent, escaped to printable ASCII (`\xff`, `\n`), so an
/// error stays one short line that every client can decode.
fn shown(got: &[u8]) -> String {
    got[..got.len().min(64)].escape_ascii().to_string()
}

/// How errors name a resource's kind, or what a request asked for.
fn kind_words(kind: Kind) -> String {
    match kind {
        Kind::Lock => "a lock".to_string(),
        Kind::Semaphore { limit } => format!("a semaphore with LIMIT {limit}"),
    }
}

/// A resource keeps its kind while held (a WRONGTYPE of resources).
pub fn wrong_kind(is: Kind, asked: Want) -> RedisError {
    err(format!(
        "WRONGKIND the resource is {}, asked as {}: a resource keeps its kind while held",
        kind_words(is),
        kind_words(asked.kind())
    ))
}

/// DLOCK.OBSERVE and DLOCK.PROCLAIM follow a plain lock's one exclusive holder; a resource held
/// shared or as a semaphore has several (the same code as a kind mismatch of ACQUIRE).
pub fn plain_only(is: Kind, command: &str) -> RedisError {
    let held = match is {
        Kind::Lock => "a lock held shared".to_string(),
        Kind::Semaphore { .. } => kind_words(is),
    };
    err(format!(
        "WRONGKIND the resource is {held}: {command} follows a plain lock's one exclusive holder"
    ))
}

pub fn upgrade_refused() -> RedisError {
    err("ERR owner holds the lock shared: upgrading to exclusive is refused (two upgrading readers would wait for each other forever); release the shared hold and acquire exclusive".to_string())
}

pub fn shared_and_limit() -> RedisError {
    err(
        "ERR SHARED and LIMIT cannot be given together: a resource is a lock or a semaphore"
            .to_string(),
    )
}

pub fn limit(got: &[u8]) -> RedisError {
    err(format!(
        "ERR LIMIT must be an integer from 1 to {MAX_LIMIT}, got '{}'",
        shown(got)
    ))
}

pub fn holders_conflict(why: &str) -> RedisError {
    err(format!("ERR the holders would not coexist: {why}"))
}

/// A deadline past what the node could have granted (now + `dlock.max-ttl-ms` + the clock
/// slack, for a client).
pub fn deadline_too_far(deadline_ms: u64, latest_ms: u64) -> RedisError {
    err(format!(
        "ERR deadline {deadline_ms} is later than this node could grant (latest {latest_ms}, unix ms)"
    ))
}

/// A guarded write with a token below its gate's: nothing changed.
pub fn stale(token: u64, gate: u64) -> RedisError {
    err(format!(
        "STALE token {token} is below the gate's {gate}: a newer holder has written; nothing was changed"
    ))
}

/// A command that may not run inside DLOCK.GUARD, and why.
pub fn guard_refused(command: &[u8], why: &str) -> RedisError {
    err(format!(
        "ERR DLOCK.GUARD cannot run '{}': {why}",
        String::from_utf8_lossy(command)
    ))
}

pub fn apply_needs_pxat() -> RedisError {
    err("ERR DLOCK.APPLY of one holder (EXCLUSIVE, SHARED or LIMIT) needs PXAT".to_string())
}

/// A DLOCK.APPLY names one holder's mode at most.
pub fn apply_modes() -> RedisError {
    err("ERR DLOCK.APPLY takes one of EXCLUSIVE, SHARED and LIMIT".to_string())
}

/// A set command's `numkeys` (dlock_core::sets::MAX_SET keys at most).
pub fn numkeys(got: &[u8], max: usize) -> RedisError {
    err(format!(
        "ERR numkeys must be an integer from 1 to {max} (a set's most keys), got '{}'",
        shown(got)
    ))
}

/// A set names each key once.
pub fn key_twice(key: &[u8]) -> RedisError {
    err(format!(
        "ERR key '{}' is given twice: a set names each key once",
        shown(key)
    ))
}

/// `MODES` gives one letter per key: `x` exclusive, `s` shared.
pub fn modes(got: &[u8], numkeys: usize) -> RedisError {
    err(format!(
        "ERR MODES must be {numkeys} letters, one per key, each x (exclusive) or s (shared), got '{}'",
        shown(got)
    ))
}

/// A set asked while its owner holds some of its keys otherwise (a single lock, another set,
/// the shared side of an exclusive hold).
pub fn set_overlaps(key: &[u8]) -> RedisError {
    err(format!(
        "ERR owner already holds '{}' otherwise than this set asks (in another set, alone, or in another mode): release it first, or ask for the set as it holds it",
        shown(key)
    ))
}
