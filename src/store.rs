//! How a lock lives in the keyspace: a module-type value (one small allocation from Redis's own
//! allocator, so `used_memory` and `MEMORY USAGE` see it) and a key handle that reads and
//! writes it. Expiry is Redis's key expiry, so `PTTL`, `TYPE` and `DEL` keep working.

use std::os::raw::c_void;
use std::ptr::NonNull;

use redis_module::{raw, Context, RedisError};

use crate::argv::Arg;

use crate::errors;
use crate::lock::Held;

/// Layout of one lock: token (u64 LE) | holds (u16 LE) | owner length (u16 LE) | owner bytes.
/// Packed into 12 bytes of header so a lock with a 36-byte owner fits jemalloc's 48-byte class.
const TOKEN_AT: usize = 0;
const HOLDS_AT: usize = 8;
const LEN_AT: usize = 10;
const OWNER_AT: usize = 12;

/// A pointer to a stored lock value. Owned by Redis once set on a key.
#[derive(Clone, Copy)]
pub struct StoredLock(NonNull<u8>);

impl StoredLock {
    /// Allocates a lock with Redis's allocator. `owner.len()` is validated to <= 256 by callers.
    pub fn alloc(owner: &[u8], token: u64, holds: u16) -> StoredLock {
        let size = OWNER_AT + owner.len();
        // Redis's allocator aborts the server on OOM like every other Redis allocation.
        let ptr = unsafe { raw::RedisModule_Alloc.expect("RedisModule_Alloc")(size) } as *mut u8;
        let lock = StoredLock(NonNull::new(ptr).expect("RedisModule_Alloc returned null"));
        let len = owner.len() as u16;
        unsafe {
            lock.write(LEN_AT, &len.to_le_bytes());
            lock.write(OWNER_AT, owner);
        }
        lock.set_token(token);
        lock.set_holds(holds);
        lock
    }

    /// # Safety
    /// `ptr` must be a value of the dlock type (from the keyspace or a type callback).
    pub unsafe fn from_raw(ptr: *mut c_void) -> Option<StoredLock> {
        NonNull::new(ptr as *mut u8).map(StoredLock)
    }

    pub fn as_raw(self) -> *mut c_void {
        self.0.as_ptr() as *mut c_void
    }

    /// Frees the allocation.
    ///
    /// # Safety
    /// The value must not be in the keyspace any more, and must not be used afterwards.
    pub unsafe fn free(self) {
        raw::RedisModule_Free.expect("RedisModule_Free")(self.as_raw());
    }

    /// Bytes allocated for this lock (what `MEMORY USAGE` reports for the value).
    pub fn allocated_size(self) -> usize {
        OWNER_AT + self.owner().len()
    }

    pub fn token(self) -> u64 {
        u64::from_le_bytes(self.read::<8>(TOKEN_AT))
    }

    pub fn holds(self) -> u16 {
        u16::from_le_bytes(self.read::<2>(HOLDS_AT))
    }

    pub fn owner<'a>(self) -> &'a [u8] {
        let len = u16::from_le_bytes(self.read::<2>(LEN_AT)) as usize;
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(OWNER_AT), len) }
    }

    pub fn held<'a>(self) -> Held<'a> {
        Held {
            owner: self.owner(),
            token: self.token(),
            holds: self.holds(),
        }
    }

    pub fn set_token(self, token: u64) {
        unsafe { self.write(TOKEN_AT, &token.to_le_bytes()) }
    }

    pub fn set_holds(self, holds: u16) {
        unsafe { self.write(HOLDS_AT, &holds.to_le_bytes()) }
    }

    fn read<const N: usize>(self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr().add(at), out.as_mut_ptr(), N) };
        out
    }

    unsafe fn write(self, at: usize, bytes: &[u8]) {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.0.as_ptr().add(at), bytes.len());
    }
}

/// An open key, closed on drop. Reads and writes dlock values and key expiry.
pub struct LockKey {
    key: *mut raw::RedisModuleKey,
}

impl LockKey {
    pub fn open(ctx: &Context, name: &Arg, write: bool) -> LockKey {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let key = unsafe {
            raw::RedisModule_OpenKey.expect("RedisModule_OpenKey")(
                ctx.ctx,
                name.as_ptr(),
                mode as i32,
            )
        };
        LockKey { key }
    }

    /// The lock stored here, `None` if the key is empty (free or expired), WRONGTYPE otherwise.
    pub fn lock(&self) -> Result<Option<StoredLock>, RedisError> {
        if self.key.is_null() {
            return Ok(None);
        }
        let key_type = unsafe { raw::RedisModule_KeyType.expect("RedisModule_KeyType")(self.key) };
        if key_type == raw::REDISMODULE_KEYTYPE_EMPTY as i32 {
            return Ok(None);
        }
        let ours = crate::types::lock_type();
        let is_ours = key_type == raw::REDISMODULE_KEYTYPE_MODULE as i32
            && unsafe { raw::RedisModule_ModuleTypeGetType.expect("GetType")(self.key) } == ours;
        if !is_ours {
            return Err(errors::wrong_type());
        }
        let value = unsafe { raw::RedisModule_ModuleTypeGetValue.expect("GetValue")(self.key) };
        Ok(unsafe { StoredLock::from_raw(value) })
    }

    /// Stores a new lock value (replacing any) and returns it.
    pub fn put(&self, owner: &[u8], token: u64, holds: u16) -> StoredLock {
        let lock = StoredLock::alloc(owner, token, holds);
        let set = unsafe {
            raw::RedisModule_ModuleTypeSetValue.expect("SetValue")(
                self.key,
                crate::types::lock_type(),
                lock.as_raw(),
            )
        };
        if set != raw::REDISMODULE_OK as i32 {
            // Not stored (key not writable): the value is still ours to free.
            unsafe { lock.free() };
        } else {
            crate::stats::lock_created();
        }
        lock
    }

    /// Sets the absolute expiry (unix ms). Absolute so that what is replicated is exact.
    pub fn expire_at(&self, unix_ms: u64) {
        unsafe { raw::RedisModule_SetAbsExpire.expect("SetAbsExpire")(self.key, unix_ms as i64) };
    }

    /// Milliseconds left, or `None` when the key has no expiry.
    pub fn ttl_ms(&self) -> Option<u64> {
        let ttl = unsafe { raw::RedisModule_GetExpire.expect("GetExpire")(self.key) };
        (ttl >= 0).then_some(ttl as u64)
    }

    /// The absolute expiry (unix ms), or `None` when the key has none.
    pub fn abs_expire_ms(&self) -> Option<u64> {
        let at = unsafe { raw::RedisModule_GetAbsExpire.expect("GetAbsExpire")(self.key) };
        (at >= 0).then_some(at as u64)
    }

    pub fn delete(&self) {
        unsafe { raw::RedisModule_DeleteKey.expect("DeleteKey")(self.key) };
    }
}

impl Drop for LockKey {
    fn drop(&mut self) {
        if !self.key.is_null() {
            unsafe { raw::RedisModule_CloseKey.expect("CloseKey")(self.key) };
        }
    }
}
