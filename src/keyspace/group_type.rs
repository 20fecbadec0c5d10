//! The `dlockmany` data type: a shared lock or a semaphore (several holders, see [`super::group`]).
//! Its callbacks mirror the plain lock's ([`super::persistence`]): validated RDB load, one
//! `DLOCK.APPLY` per holder in an AOF rewrite, digest, memory, free, and the count of leases that
//! ended unreleased when the value leaves the keyspace. The node counter stays with the lock
//! type's aux data.

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use dlock_core::group::Mode;
use redis_module::{native_types::RedisType, raw, RedisError};

use super::group::{self, Group, GROUP_ENCODING_VERSION};
use super::persistence::{log_io, RdbIn, RdbOut};
use super::MOVED;
use crate::node::node;
use crate::wire::errors;
use crate::{server, stats};

pub static GROUP_TYPE: RedisType = RedisType::new(
    "dlockmany",
    GROUP_ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: 5,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: None, // COPY of a shared lock or a semaphore is refused, as for a lock
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: Some(unlink),
        copy2: None,
        aux_save2: None,
    },
);

pub fn group_type() -> *mut raw::RedisModuleType {
    *GROUP_TYPE.raw_type.borrow()
}

/// A group Redis hands to a type callback.
///
/// # Safety
/// `value` must be a `dlockmany` value (a `Box<Group>` given to Redis) alive for the borrow.
pub unsafe fn group_ref<'a>(value: *const c_void) -> Option<&'a Group> {
    // SAFETY: the caller's promise: a live boxed Group.
    unsafe { value.cast::<Group>().as_ref() }
}

/// Stores `group` in an open key (replacing what it held).
pub fn set_group(key: NonNull<raw::RedisModuleKey>, group: Group) -> Result<(), RedisError> {
    let set = crate::api!(RedisModule_ModuleTypeSetValue).ok_or_else(errors::cannot_store)?;
    let raw_group = Box::into_raw(Box::new(group)).cast::<c_void>();
    // SAFETY: `key` is open for writing by the running command; the value is ours to give.
    if unsafe { set(key.as_ptr(), group_type(), raw_group) } == raw::REDISMODULE_OK as c_int {
        stats::lock_created();
        return Ok(());
    }
    // SAFETY: not stored, so still ours, from Box::into_raw above.
    drop(unsafe { Box::from_raw(raw_group.cast::<Group>()) });
    Err(errors::cannot_store())
}

extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(group) = unsafe { group_ref(value) } {
        group::encode(group, &mut RdbOut(io));
    }
}

/// Loads one group, refusing anything malformed (null, with a log line). As for a lock, the
/// counter rises to its tokens while the server loads its own data, and a RESTORE carrying a
/// token more than a year ahead of this node is refused.
extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let group = match group::decode(&mut RdbIn(io), encver) {
        Ok(group) => group,
        Err(why) => return refuse(io, &why.to_string()),
    };
    let newest = group.holders.iter().map(|h| h.token).max().unwrap_or(0);
    if server::is_loading() {
        node().raise_counter(newest);
    } else if node().check_client_token(newest).is_err() {
        let why = format!("token {newest} is more than a year ahead of this node");
        return refuse(io, &why);
    }
    stats::lock_created();
    Box::into_raw(Box::new(group)).cast()
}

fn refuse(io: *mut raw::RedisModuleIO, why: &str) -> *mut c_void {
    log_io(
        io,
        &format!("dlock: refusing a shared lock or semaphore value: {why}"),
    );
    std::ptr::null_mut()
}

/// One `DLOCK.APPLY key owner token holds PXAT deadline MODE` per holder, the mode last
/// (`EXCLUSIVE`, `SHARED` or `LIMIT k`); Redis appends the key's `PEXPIREAT` itself.
extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let (Some(group), Some(emit)) = (
        unsafe { group_ref(value) },
        crate::api!(RedisModule_EmitAOF),
    ) else {
        return;
    };
    if group.place == MOVED {
        return;
    }
    for h in &group.holders {
        // SAFETY: `aof` and `key` come from Redis for this call (see `emit_holder_apply!`).
        unsafe { emit_holder_apply!(emit, aof, key, h, i64::from(h.holds), group.limit) };
    }
}

/// Calls `$emit($first, "DLOCK.APPLY", format, key, owner, len, token, holds, "PXAT",
/// deadline, mode word [, limit])`: the effect form of one holder, for both
/// `RedisModule_EmitAOF` (AOF rewrite) and `RedisModule_Replicate` (a write's effect), which
/// take the same format after their first argument. A permit adds its semaphore's limit.
///
/// # Safety
/// `$first` must be what `$emit` takes (a live AOF I/O or command context) and `$key` a live
/// key string; the format matches the arguments (s: the key, b: owner pointer and length, l:
/// integers, c: static C strings).
macro_rules! emit_holder_apply {
    ($emit:expr, $first:expr, $key:expr, $holder:expr, $holds:expr, $limit:expr) => {{
        let h: &$crate::keyspace::group::Holder = $holder;
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let (owner, len, holds) = (h.owner.as_ptr(), h.owner.len(), $holds);
        let (name, pxat) = (c"DLOCK.APPLY".as_ptr(), c"PXAT".as_ptr());
        let word = $crate::keyspace::group_type::mode_word(h.mode).as_ptr();
        match h.mode {
            dlock_core::group::Mode::Permit => $emit(
                $first,
                name,
                c"sbllclcl".as_ptr(),
                $key,
                owner,
                len,
                int(h.token),
                holds,
                pxat,
                int(h.deadline_ms),
                word,
                i64::from($limit),
            ),
            _ => $emit(
                $first,
                name,
                c"sbllclc".as_ptr(),
                $key,
                owner,
                len,
                int(h.token),
                holds,
                pxat,
                int(h.deadline_ms),
                word,
            ),
        }
    }};
}
pub(crate) use emit_holder_apply;

/// The `DLOCK.APPLY` option naming a lock holder's mode.
pub fn mode_word(mode: Mode) -> &'static std::ffi::CStr {
    match mode {
        Mode::Exclusive => c"EXCLUSIVE",
        Mode::Shared => c"SHARED",
        Mode::Permit => c"LIMIT", // followed by the limit
    }
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe { group_ref(value) }.map_or(0, Group::allocated_size)
}

/// `DEBUG DIGEST`: two groups digest alike only if every holder's every field agrees.
extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let Some(group) = (unsafe { group_ref(value) }) else {
        return;
    };
    let (Some(add_bytes), Some(add_int), Some(end)) = (
        crate::api!(RedisModule_DigestAddStringBuffer),
        crate::api!(RedisModule_DigestAddLongLong),
        crate::api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    // SAFETY: a live digest context from Redis; the owners outlive the calls.
    unsafe {
        add_int(md, i64::from(group.limit));
        add_int(md, group.place as i64);
        for h in &group.holders {
            add_bytes(md, h.owner.as_ptr().cast(), h.owner.len());
            let fields = [
                group::mode_code(h.mode),
                h.token,
                u64::from(h.holds),
                h.deadline_ms,
            ];
            for field in fields {
                add_int(md, field as i64);
            }
        }
        end(md);
    }
}

extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        stats::lock_freed();
        // SAFETY: Redis gives back a value it got from Box::into_raw, once.
        drop(unsafe { Box::from_raw(value.cast::<Group>()) });
    }
}

/// The group leaves the keyspace (its last holder left, DEL, expiry, replaced by a write): the
/// holders whose lease had ended count as expired before release.
extern "C" fn unlink(_ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(group) = unsafe { group_ref(value) } {
        for _ in 0..group.ended(server::now_ms()) {
            stats::count(&stats::EXPIRED);
        }
    }
}
