//! The `dlocklock` data type and its persistence: per-lock RDB and AOF-rewrite callbacks, and
//! the node's fencing counter as RDB aux data (saved with every RDB, including DEBUG RELOAD and
//! replica full syncs, whether or not any lock exists).

use std::cell::Cell;
use std::os::raw::{c_int, c_void};

use redis_module::{native_types::RedisType, raw};

use crate::lock::{MAX_HOLDS, MAX_OWNER_LEN};
use crate::node::node;
use crate::stats;
use crate::store::StoredLock;

/// Bump when the RDB layout of a lock changes (and keep loading the old one).
const ENCODING_VERSION: i32 = 1;

pub static LOCK_TYPE: RedisType = RedisType::new(
    "dlocklock",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: 4, // up to unlink2: what Redis 7.0 knows; newer servers accept it too
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: None,
        free: Some(free),
        aux_load: Some(aux_load),
        aux_save: Some(aux_save),
        aux_save_triggers: raw::Aux::Before as c_int,
        free_effort: None,
        unlink: None,
        copy: None,
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: Some(unlink),
        copy2: None,
        aux_save2: None,
    },
);

pub fn lock_type() -> *mut raw::RedisModuleType {
    *LOCK_TYPE.raw_type.borrow()
}

extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    let Some(lock) = (unsafe { StoredLock::from_raw(value) }) else {
        return;
    };
    raw::save_slice(rdb, lock.owner());
    raw::save_unsigned(rdb, lock.token());
    raw::save_unsigned(rdb, u64::from(lock.holds()));
}

/// Loads one lock; a malformed one fails the load (null) rather than entering the keyspace.
extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    if encver != ENCODING_VERSION {
        return std::ptr::null_mut();
    }
    let (Ok(owner), Ok(token), Ok(holds)) = (
        raw::load_string_buffer(rdb),
        raw::load_unsigned(rdb),
        raw::load_unsigned(rdb),
    ) else {
        return std::ptr::null_mut();
    };
    let owner = owner.as_ref();
    let valid = (1..=MAX_OWNER_LEN).contains(&owner.len())
        && token >= 1
        && (1..=u64::from(MAX_HOLDS)).contains(&holds);
    if !valid {
        return std::ptr::null_mut();
    }
    node().raise_counter(token);
    stats::lock_created();
    StoredLock::alloc(owner, token, holds as u16).as_raw()
}

/// One `DLOCK.APPLY` per lock; Redis itself appends `PEXPIREAT` for the key's expiry.
extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let Some(lock) = (unsafe { StoredLock::from_raw(value) }) else {
        return;
    };
    let owner = lock.owner();
    unsafe {
        raw::RedisModule_EmitAOF.expect("EmitAOF")(
            aof,
            c"DLOCK.APPLY".as_ptr(),
            c"sbll".as_ptr(),
            key,
            owner.as_ptr(),
            owner.len(),
            lock.token() as i64,
            i64::from(lock.holds()),
        );
    }
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    unsafe { StoredLock::from_raw(value as *mut c_void) }.map_or(0, StoredLock::allocated_size)
}

extern "C" fn free(value: *mut c_void) {
    if let Some(lock) = unsafe { StoredLock::from_raw(value) } {
        stats::lock_freed();
        unsafe { lock.free() };
    }
}

extern "C" fn aux_save(rdb: *mut raw::RedisModuleIO, when: c_int) {
    if when == raw::Aux::Before as c_int {
        raw::save_unsigned(rdb, node().counter());
    }
}

extern "C" fn aux_load(rdb: *mut raw::RedisModuleIO, _encver: c_int, when: c_int) -> c_int {
    if when != raw::Aux::Before as c_int {
        return raw::REDISMODULE_OK as c_int;
    }
    match raw::load_unsigned(rdb) {
        Ok(counter) => {
            node().raise_counter(counter);
            raw::REDISMODULE_OK as c_int
        }
        Err(_) => raw::REDISMODULE_ERR as c_int,
    }
}

thread_local! {
    /// Hash of the name of the last lock key unlinked on this (the main) thread. Redis sends
    /// the `expired` keyspace event right after unlinking, when the value's type is gone; this
    /// tells that event whether the expired key was a lock.
    static LAST_UNLINKED: Cell<u64> = const { Cell::new(0) };
}

extern "C" fn unlink(ctx: *mut raw::RedisModuleKeyOptCtx, _value: *const c_void) {
    let name = unsafe { raw::RedisModule_GetKeyNameFromOptCtx.expect("KeyName")(ctx) };
    let name = redis_module::RedisString::string_as_slice(name);
    LAST_UNLINKED.with(|last| last.set(name_hash(name)));
}

/// Called from the `expired` keyspace event: counts it if the expired key was a lock.
pub fn on_key_expired(name: &[u8]) {
    let was_lock = LAST_UNLINKED.with(|last| last.replace(0)) == name_hash(name);
    if was_lock {
        stats::count(&stats::EXPIRED);
    }
}

fn name_hash(name: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    // Never 0, so "nothing recorded" cannot match.
    BuildHasherDefault::<DefaultHasher>::default().hash_one(name) | 1
}
