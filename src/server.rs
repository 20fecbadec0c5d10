//! Facts about the running server that decide what the module may do: which newer APIs it
//! has, whether writes are paused, whether it is loading, and whether it may evict lock keys.

use std::os::raw::c_int;

use redis_module::{raw, Context};

/// A Redis module API function pointer, `None` when this server lacks it.
#[macro_export]
macro_rules! api {
    ($name:ident) => {
        // SAFETY: Redis's API pointers are written once, by RedisModule_Init at the start of
        // RedisModule_OnLoad, before any other module code runs; afterwards they are only read.
        unsafe { redis_module::raw::$name }
    };
}

/// The server's version as `0x00MMmmpp` (Valkey reports its own version, 8.x for Valkey 8).
pub fn version() -> u32 {
    // SAFETY: a plain getter without arguments.
    crate::api!(RedisModule_GetServerVersion).map_or(0, |get| unsafe { get() } as u32)
}

/// Internal commands (the `internal` command flag) came with Redis 8.0; Valkey 8 reports the
/// same major version without them, so callers try the flag and fall back.
pub fn may_have_internal_commands() -> bool {
    version() >= 0x0008_0000
}

/// `RedisModule_GetContextFlags`; `ctx` may be null for the server-wide flags.
pub fn context_flags(ctx: *mut raw::RedisModuleCtx) -> c_int {
    // Unknown (API missing): every flag set, so that every guard errs on the safe side.
    // SAFETY: a live context, or null, which the API accepts for server-wide flags.
    crate::api!(RedisModule_GetContextFlags).map_or(!0, |get| unsafe { get(ctx) })
}

pub fn flag(flags: c_int, which: u32) -> bool {
    flags & which as c_int != 0
}

/// The database the command's client has selected.
pub fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: the context of a running command or callback.
    crate::api!(RedisModule_GetSelectedDb).map_or(0, |get| unsafe { get(ctx.ctx) })
}

/// The server is loading its own data (startup, a full sync, DEBUG RELOAD), as opposed to a
/// client's RESTORE.
pub fn is_loading() -> bool {
    let flags = context_flags(std::ptr::null_mut());
    flag(flags, raw::REDISMODULE_CTX_FLAGS_LOADING)
        || flag(flags, raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
}

/// Writes are paused (CLIENT PAUSE, and SHUTDOWN or FAILOVER waiting for replicas): anything
/// the module replicates now would abort the server, so work that replicates waits.
pub fn writes_paused() -> bool {
    // SAFETY: a plain getter without arguments.
    crate::api!(RedisModule_AvoidReplicaTraffic).is_some_and(|paused| unsafe { paused() } != 0)
}

/// This node replicates from a master.
pub fn is_replica(ctx: &Context) -> bool {
    flag(context_flags(ctx.ctx), raw::REDISMODULE_CTX_FLAGS_SLAVE)
}

/// `maxmemory` is set with a policy that may evict keys, and lock keys are keys with a TTL:
/// both `allkeys-*` and `volatile-*` policies can evict them.
pub fn may_evict(flags: c_int) -> bool {
    flag(flags, raw::REDISMODULE_CTX_FLAGS_MAXMEMORY)
        && flag(flags, raw::REDISMODULE_CTX_FLAGS_EVICT)
}

/// `CONFIG GET maxmemory-policy`, for error messages.
pub fn eviction_policy(ctx: &Context) -> String {
    match ctx.call("CONFIG", &["GET", "maxmemory-policy"]) {
        Ok(redis_module::RedisValue::Array(items)) => match items.get(1) {
            Some(redis_module::RedisValue::SimpleString(s)) => s.clone(),
            Some(redis_module::RedisValue::BulkString(s)) => s.clone(),
            Some(redis_module::RedisValue::BulkRedisString(s)) => s.to_string_lossy(),
            _ => "an evicting policy".to_string(),
        },
        _ => "an evicting policy".to_string(),
    }
}

/// The wall clock in unix ms (what deadlines are compared with).
pub fn now_ms() -> u64 {
    dlock_core::Clock::now_ms(&dlock_core::SystemClock)
}

/// The wall clock in unix µs; `now_us() / 1000` is [`now_ms`].
pub fn now_us() -> u64 {
    dlock_core::Clock::now_us(&dlock_core::SystemClock)
}

/// What the running server offers for atomic slot migration, which Redis and Valkey added with
/// different APIs (and different numbers for the same server-event ids).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum SlotMigration {
    /// Redis 8.4+: `CLUSTER MIGRATION IMPORT`, with server events for the migration (18) and
    /// the trim of moved keys (19); nothing to opt into.
    Redis,
    /// Valkey 9+: `CLUSTER MIGRATESLOTS`, refused unless every module opts in; one server event
    /// (19) for its phases.
    Valkey,
    /// Neither: slots move only with `SETSLOT` / `MIGRATE`.
    None,
}

/// Which [`SlotMigration`] API this server has: by the name it gives itself (`server_name` in
/// `INFO server`, which only Valkey sets) and its version.
pub fn slot_migration(ctx: &Context) -> SlotMigration {
    let valkey = server_name(ctx).as_deref() == Some("valkey");
    match (valkey, version()) {
        (true, v) if v >= 0x0009_0000 => SlotMigration::Valkey,
        (false, v) if v >= 0x0008_0400 => SlotMigration::Redis,
        _ => SlotMigration::None,
    }
}

/// Valkey 8 selects the database of a keyspace notification on the client whose command sent it
/// and leaves it there (fixed in Valkey 9): with any module listening, `MOVE` and `COPY ... DB`
/// would leave their client in the other database, and a lazy expiry or eviction in another
/// database would too. On such a server the module listens to nothing.
pub fn notifications_switch_databases(ctx: &Context) -> bool {
    let major = version() >> 16;
    major < 9 && server_name(ctx).as_deref() == Some("valkey")
}

fn server_name(ctx: &Context) -> Option<String> {
    server_field(ctx, c"server_name")
}

/// The server's run id (`INFO server`'s `run_id`): random per process and constant for its
/// life, so it is read once and kept. Clients tell servers apart by it (`DLOCK.RUNID`).
pub fn run_id(ctx: &Context) -> Option<&'static str> {
    static RUN_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(known) = RUN_ID.get() {
        return Some(known);
    }
    let read = server_field(ctx, c"run_id").filter(|id| !id.is_empty())?;
    Some(RUN_ID.get_or_init(|| read))
}

/// One field of `INFO server`, read in-process (no ACL check, unlike a client's INFO).
fn server_field(ctx: &Context, name: &std::ffi::CStr) -> Option<String> {
    let (get, field, free) = (
        crate::api!(RedisModule_GetServerInfo)?,
        crate::api!(RedisModule_ServerInfoGetFieldC)?,
        crate::api!(RedisModule_FreeServerInfo)?,
    );
    // SAFETY: a live context; the info is freed below, after its field was copied out, and the
    // names are NUL-terminated strings.
    unsafe {
        let info = get(ctx.ctx, c"server".as_ptr());
        if info.is_null() {
            return None;
        }
        let value = field(info, name.as_ptr());
        let value = (!value.is_null()).then(|| {
            std::ffi::CStr::from_ptr(value)
                .to_string_lossy()
                .into_owned()
        });
        free(ctx.ctx, info);
        value
    }
}

/// The module's own context, not tied to any command: callbacks that Redis gives no context
/// (a key leaving the keyspace, a value loading) start timers with it.
static DETACHED: std::sync::atomic::AtomicPtr<raw::RedisModuleCtx> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Creates the detached context; called once at load.
pub fn create_detached(ctx: &Context) {
    if let Some(create) = crate::api!(RedisModule_GetDetachedThreadSafeContext) {
        // SAFETY: the load context; the detached context lives as long as the module.
        let detached = unsafe { create(ctx.ctx) };
        DETACHED.store(detached, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The detached context, to start a timer from a callback without one (`None` before load).
/// Only the main thread calls it: timers are created and run there.
pub fn detached() -> Option<Context> {
    let ctx = DETACHED.load(std::sync::atomic::Ordering::Relaxed);
    (!ctx.is_null()).then(|| Context::new(ctx))
}

/// The commands that can give a key a longer life than its lock by hand.
const TTL_COMMANDS: [&std::ffi::CStr; 5] = [
    c"cmdstat_persist",
    c"cmdstat_expire",
    c"cmdstat_pexpire",
    c"cmdstat_expireat",
    c"cmdstat_pexpireat",
];

/// How many times the server ran `PERSIST` and the `EXPIRE` family, however called (clients,
/// MULTI, scripts, its master): a count that moved is the only reason a lock key's TTL could
/// differ from its lock's (`keyspace::sweep`). Read from `INFO commandstats`; `u64::MAX` when
/// the server cannot say (then the sweep runs as if it moved).
pub fn ttl_command_calls(ctx: &Context) -> u64 {
    let (Some(get), Some(field), Some(free)) = (
        crate::api!(RedisModule_GetServerInfo),
        crate::api!(RedisModule_ServerInfoGetFieldC),
        crate::api!(RedisModule_FreeServerInfo),
    ) else {
        return u64::MAX;
    };
    // SAFETY: a live context; the info is freed below, the field names are static, and each
    // field's text is read before the info is freed.
    unsafe {
        let info = get(ctx.ctx, c"commandstats".as_ptr());
        if info.is_null() {
            return u64::MAX;
        }
        let mut calls = 0u64;
        for name in TTL_COMMANDS {
            let text = field(info, name.as_ptr());
            if !text.is_null() {
                calls = calls.saturating_add(calls_of(std::ffi::CStr::from_ptr(text).to_bytes()));
            }
        }
        free(ctx.ctx, info);
        calls
    }
}

/// `calls=N` out of a commandstats line (`calls=3,usec=10,...`); 0 if absent.
fn calls_of(line: &[u8]) -> u64 {
    line.split(|&b| b == b',')
        .find_map(|part| part.strip_prefix(b"calls="))
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::calls_of;

    #[test]
    fn calls_are_read_from_a_commandstats_line() {
        assert_eq!(calls_of(b"calls=42,usec=10,usec_per_call=0.24"), 42);
        assert_eq!(calls_of(b"usec=10,calls=7"), 7);
        assert_eq!(calls_of(b"usec=10"), 0);
        assert_eq!(calls_of(b"calls=x"), 0);
    }
}
