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

fn server_name(ctx: &Context) -> Option<String> {
    let (get, field, free) = (
        crate::api!(RedisModule_GetServerInfo)?,
        crate::api!(RedisModule_ServerInfoGetFieldC)?,
        crate::api!(RedisModule_FreeServerInfo)?,
    );
    // SAFETY: a live context; the info is freed below, after its field was copied out, and the
    // names are static NUL-terminated strings.
    unsafe {
        let info = get(ctx.ctx, c"server".as_ptr());
        if info.is_null() {
            return None;
        }
        let name = field(info, c"server_name".as_ptr());
        let name = (!name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned()
        });
        free(ctx.ctx, info);
        name
    }
}
