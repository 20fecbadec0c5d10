//! The `dlocklock` data type: RDB save and load of each lock, its AOF-rewrite form, digest and
//! memory size, and the node's fencing counter as RDB aux data.
//!
//! Loading trusts nothing: the module declares that it handles I/O errors (so a truncated or
//! crafted payload fails the load or the RESTORE cleanly instead of aborting the server), and
//! [`codec`] validates every field before anything is allocated.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use redis_module::{native_types::RedisType, raw, RedisError};

use super::codec::{self, Sink, Source, ENCODING_VERSION};
use super::owner::OwnerBuf;
use super::value::{LockRef, OwnedLock, Record};
use super::{place, MOVED};
use crate::node::node;
use crate::server;
use crate::stats;
use crate::wire::errors;

pub static LOCK_TYPE: RedisType = RedisType::new(
    super::TYPE_NAME,
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        // 5 adds aux_save2 (Redis 7.2+): no aux field at all until a token was issued. Older
        // servers read the methods up to the version they know and use aux_save.
        version: 5,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: Some(aux_load),
        aux_save: Some(aux_save),
        aux_save_triggers: raw::Aux::Before as c_int,
        free_effort: None,
        unlink: None,
        copy: None, // COPY of a lock is refused ("not supported for this module key")
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: Some(unlink),
        copy2: None,
        aux_save2: Some(aux_save2),
    },
);

fn lock_type() -> *mut raw::RedisModuleType {
    *LOCK_TYPE.raw_type.borrow()
}

/// A dlock value in an open key: a lock (one holder) or a group (a shared lock, a semaphore).
#[derive(Clone, Copy)]
pub enum Value {
    Lock(NonNull<c_void>),
    Group(NonNull<c_void>),
}

/// The dlock value in an open key; `None` if the key is empty, WRONGTYPE for any other type.
pub fn value_of(key: NonNull<raw::RedisModuleKey>) -> Result<Option<Value>, RedisError> {
    let (Some(key_type), Some(get_type), Some(get_value)) = (
        crate::api!(RedisModule_KeyType),
        crate::api!(RedisModule_ModuleTypeGetType),
        crate::api!(RedisModule_ModuleTypeGetValue),
    ) else {
        return Err(errors::cannot_store());
    };
    // SAFETY: `key` is an open key of the running command.
    let kind = unsafe { key_type(key.as_ptr()) };
    if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
        return Ok(None);
    }
    if kind != raw::REDISMODULE_KEYTYPE_MODULE as c_int {
        return Err(errors::wrong_type());
    }
    // SAFETY: as above; GetType is valid for module keys.
    let module_type = unsafe { get_type(key.as_ptr()) };
    let wrap = if module_type == lock_type() {
        Value::Lock
    } else if module_type == super::group_type::group_type() {
        Value::Group
    } else {
        return Err(errors::wrong_type());
    };
    // SAFETY: as above, and the key holds a value of one of our types.
    Ok(NonNull::new(unsafe { get_value(key.as_ptr()) }).map(wrap))
}

/// Stores `lock` in an open key (replacing what it held); on failure the lock is freed.
pub fn set_value(key: NonNull<raw::RedisModuleKey>, lock: OwnedLock) -> Result<(), RedisError> {
    let set = crate::api!(RedisModule_ModuleTypeSetValue).ok_or_else(errors::cannot_store)?;
    let raw_lock = lock.into_raw();
    // SAFETY: `key` is open for writing by the running command; the value is ours to give.
    if unsafe { set(key.as_ptr(), lock_type(), raw_lock) } == raw::REDISMODULE_OK as c_int {
        stats::lock_created();
        return Ok(());
    }
    if let Some(ptr) = NonNull::new(raw_lock) {
        // SAFETY: not stored, so still ours; `into_raw` came from a live allocation.
        drop(unsafe { OwnedLock::from_raw(ptr) });
    }
    Err(errors::cannot_store())
}

/// A value Redis hands to a type callback.
///
/// # Safety
/// `value` must be a dlock value alive for the callback.
unsafe fn lock_ref<'a>(value: *const c_void) -> Option<LockRef<'a>> {
    // SAFETY: the caller's promise (a live dlock value) is `LockRef::new`'s contract.
    NonNull::new(value as *mut c_void).map(|ptr| unsafe { LockRef::new(ptr) })
}

/// The RDB loader as a field source (`None` on a short read or a wrong field marker).
pub(super) struct RdbIn(pub *mut raw::RedisModuleIO);

impl Source for RdbIn {
    type Bytes = redis_module::RedisBuffer;
    fn unsigned(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }
    fn bytes(&mut self) -> Option<redis_module::RedisBuffer> {
        raw::load_string_buffer(self.0).ok()
    }
}

pub(super) struct RdbOut(pub *mut raw::RedisModuleIO);

impl Sink for RdbOut {
    fn unsigned(&mut self, value: u64) {
        raw::save_unsigned(self.0, value);
    }
    fn bytes(&mut self, value: &[u8]) {
        raw::save_slice(self.0, value);
    }
}

extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(lock) = unsafe { lock_ref(value) } {
        codec::encode(&lock.record_in(&mut OwnerBuf::default()), &mut RdbOut(io));
    }
}

/// Loads one lock. Anything malformed is refused (null) with a log line; nothing is allocated
/// or changed for it. While the server loads its own data (startup, full sync) the counter
/// rises to the token here; for RESTORE it rises only once the key is in (see
/// [`super::moves`]), so a refused RESTORE changes nothing.
extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let decoded = match codec::decode(&mut RdbIn(io), encver) {
        Ok(decoded) => decoded,
        Err(why) => return refuse(io, &why.to_string()),
    };
    let place = decoded.place.unwrap_or_else(|| place_of_io(io));
    if server::is_loading() {
        node().raise_counter(decoded.token);
    } else if node().check_client_token(decoded.token).is_err() {
        return refuse(
            io,
            &format!(
                "token {} is more than a year ahead of this node",
                decoded.token
            ),
        );
    }
    let record = Record {
        owner: decoded.owner.as_ref(),
        token: decoded.token,
        holds: decoded.holds,
        deadline_ms: decoded.deadline_ms,
        place,
    };
    match OwnedLock::new(&record) {
        Some(lock) => {
            stats::lock_created();
            lock.into_raw()
        }
        None => std::ptr::null_mut(),
    }
}

fn refuse(io: *mut raw::RedisModuleIO, why: &str) -> *mut c_void {
    log_io(io, &format!("dlock: refusing a lock value: {why}"));
    std::ptr::null_mut()
}

/// The place of a version-1 lock, computed from the key the loader is filling.
fn place_of_io(io: *mut raw::RedisModuleIO) -> u64 {
    let (Some(name_of), Some(db_of)) = (
        crate::api!(RedisModule_GetKeyNameFromIO),
        crate::api!(RedisModule_GetDbIdFromIO),
    ) else {
        return MOVED;
    };
    // SAFETY: `io` is the loader of the running rdb_load call.
    let (name, db) = unsafe { (name_of(io), db_of(io)) };
    if name.is_null() {
        return MOVED;
    }
    place(
        db,
        redis_module::RedisString::string_as_slice(name.cast_mut()),
    )
}

pub(super) fn log_io(io: *mut raw::RedisModuleIO, message: &str) {
    let (Some(log), Ok(message)) = (crate::api!(RedisModule_LogIOError), CString::new(message))
    else {
        return;
    };
    // SAFETY: a live loader, a static format and a NUL-terminated message.
    unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr()) };
}

/// One `DLOCK.APPLY` per held lock; Redis appends the key's `PEXPIREAT` itself. A moved lock
/// is dropped: it is not held anywhere.
extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let Some(lock) = (unsafe { lock_ref(value) }) else {
        return;
    };
    let mut owner = OwnerBuf::default();
    let record = lock.record_in(&mut owner);
    let Some(emit) = crate::api!(RedisModule_EmitAOF) else {
        return;
    };
    if record.place == MOVED {
        return;
    }
    let (token, holds, deadline) = record.apply_args();
    // SAFETY: `aof` and `key` come from Redis for this call; the format matches the arguments:
    // s = key, b = owner pointer + length, l = integers, c = C string.
    unsafe {
        emit(
            aof,
            c"DLOCK.APPLY".as_ptr(),
            c"sbllcl".as_ptr(),
            key,
            record.owner.as_ptr(),
            record.owner.len(),
            token,
            holds,
            c"PXAT".as_ptr(),
            deadline,
        );
    }
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe { lock_ref(value) }.map_or(0, |lock| lock.allocated_size())
}

/// `DEBUG DIGEST` / `DEBUG DIGEST-VALUE`: two locks digest alike only if every field agrees.
extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let Some(lock) = (unsafe { lock_ref(value) }) else {
        return;
    };
    let mut owner = OwnerBuf::default();
    let r = lock.record_in(&mut owner);
    let (Some(add_bytes), Some(add_int), Some(end)) = (
        crate::api!(RedisModule_DigestAddStringBuffer),
        crate::api!(RedisModule_DigestAddLongLong),
        crate::api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    // SAFETY: a live digest context from Redis; the owner slice outlives the calls.
    unsafe {
        add_bytes(md, r.owner.as_ptr().cast(), r.owner.len());
        for field in [r.token, u64::from(r.holds), r.deadline_ms, r.place] {
            add_int(md, field as i64);
        }
        end(md);
    }
}

extern "C" fn free(value: *mut c_void) {
    if let Some(ptr) = NonNull::new(value) {
        stats::lock_freed();
        // SAFETY: Redis gives the value back to be freed, once.
        drop(unsafe { OwnedLock::from_raw(ptr) });
    }
}

/// A lock leaves the keyspace (release, DEL, expiry, overwrite). Counted as expired before
/// release when it was past its deadline.
extern "C" fn unlink(_ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(lock) = unsafe { lock_ref(value) } {
        let deadline = lock.deadline_ms();
        if deadline != super::FOLLOW_KEY_TTL && deadline <= server::now_ms() {
            stats::count(&stats::EXPIRED);
        }
    }
}

extern "C" fn aux_save(io: *mut raw::RedisModuleIO, when: c_int) {
    if when == raw::Aux::Before as c_int {
        raw::save_unsigned(io, node().counter());
    }
}

/// Redis 7.2+: writes nothing (so no aux field at all) until a token was issued, so a server
/// that merely loaded the module can still drop it.
extern "C" fn aux_save2(io: *mut raw::RedisModuleIO, when: c_int) {
    let counter = node().counter();
    if when == raw::Aux::Before as c_int && counter > 0 {
        raw::save_unsigned(io, counter);
    }
}

extern "C" fn aux_load(io: *mut raw::RedisModuleIO, encver: c_int, when: c_int) -> c_int {
    if when != raw::Aux::Before as c_int {
        return raw::REDISMODULE_OK as c_int;
    }
    match codec::decode_counter(&mut RdbIn(io), encver) {
        Ok(counter) => {
            node().raise_counter(counter);
            raw::REDISMODULE_OK as c_int
        }
        Err(why) => {
            log_io(
                io,
                &format!("dlock: refusing the saved fencing counter: {why}"),
            );
            raw::REDISMODULE_ERR as c_int
        }
    }
}
