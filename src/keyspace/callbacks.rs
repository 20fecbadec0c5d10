//! The callbacks the two data types share the shape of (see [`super::types`]): the AOF
//! rewrite (the same `DLOCK.APPLY` effects a write replicates), memory, digest, free, and the
//! count of leases that ended unreleased.

use std::os::raw::c_void;
use std::ptr::NonNull;

use dlock_core::Mode;
use redis_module::raw;

use super::codec;
use super::compact::{CompactRef, OwnedCompact};
use super::owner::OwnerBuf;
use super::table::HolderTable;
use super::MOVED;
use crate::stats;

/// One `DLOCK.APPLY key owner token holds PXAT deadline` per plain lock; Redis appends the key's
/// `PEXPIREAT` itself. A moved lock is dropped: it is not held anywhere.
pub extern "C" fn compact_aof(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let (Some(lock), Some(emit)) = (
        unsafe { CompactRef::from_callback(value) },
        crate::api!(RedisModule_EmitAOF),
    ) else {
        return;
    };
    let mut owner = OwnerBuf::default();
    let record = lock.record_in(&mut owner);
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

/// One `DLOCK.APPLY key owner token holds PXAT deadline MODE` per holder of a table.
pub extern "C" fn table_aof(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let (Some(table), Some(emit)) = (
        unsafe { HolderTable::from_callback(value) },
        crate::api!(RedisModule_EmitAOF),
    ) else {
        return;
    };
    if table.place == MOVED {
        return;
    }
    for slot in table.iter() {
        let holds = i64::from(slot.lease.holds);
        // SAFETY: `aof` and `key` come from Redis for this call (see `emit_holder_apply!`).
        unsafe { emit_holder_apply!(emit, aof, key, slot, holds, table.limit()) };
    }
}

/// Calls `$emit($first, "DLOCK.APPLY", format, key, owner, len, token, holds, "PXAT",
/// deadline, mode word [, limit])`: the effect form of one holder of a table, for both
/// `RedisModule_EmitAOF` (AOF rewrite) and `RedisModule_Replicate` (a write's effect), which
/// take the same format after their first argument. A permit adds its semaphore's limit.
///
/// # Safety
/// `$first` must be what `$emit` takes (a live AOF I/O or command context) and `$key` a live
/// key string; the format matches the arguments (s: the key, b: owner pointer and length, l:
/// integers, c: static C strings).
macro_rules! emit_holder_apply {
    ($emit:expr, $first:expr, $key:expr, $slot:expr, $holds:expr, $limit:expr) => {{
        let s: &$crate::keyspace::table::Slot = $slot;
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let (owner, len, holds) = (s.owner.as_ptr(), s.owner.len(), $holds);
        let (name, pxat) = (c"DLOCK.APPLY".as_ptr(), c"PXAT".as_ptr());
        let word = $crate::keyspace::callbacks::mode_word(s.mode).as_ptr();
        let (token, deadline) = (int(s.lease.token), int(s.lease.deadline_ms));
        match s.mode {
            dlock_core::Mode::Permit => $emit(
                $first,
                name,
                c"sbllclcl".as_ptr(),
                $key,
                owner,
                len,
                token,
                holds,
                pxat,
                deadline,
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
                token,
                holds,
                pxat,
                deadline,
                word,
            ),
        }
    }};
}
pub(crate) use emit_holder_apply;

/// The `DLOCK.APPLY` option naming a holder's mode.
pub fn mode_word(mode: Mode) -> &'static std::ffi::CStr {
    match mode {
        Mode::Exclusive => c"EXCLUSIVE",
        Mode::Shared => c"SHARED",
        Mode::Permit => c"LIMIT", // followed by the limit
    }
}

pub extern "C" fn compact_mem(value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe { CompactRef::from_callback(value) }.map_or(0, |lock| lock.allocated_size())
}

pub extern "C" fn table_mem(value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe { HolderTable::from_callback(value) }.map_or(0, HolderTable::allocated_size)
}

/// Adds one sequence of fields to a digest: `DEBUG DIGEST` xors the sequences, so a table's
/// holders digest alike in any order, and two values digest alike only if every field agrees.
fn digest_sequence(md: *mut raw::RedisModuleDigest, bytes: &[u8], fields: &[u64]) {
    let (Some(add_bytes), Some(add_int), Some(end)) = (
        crate::api!(RedisModule_DigestAddStringBuffer),
        crate::api!(RedisModule_DigestAddLongLong),
        crate::api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    // SAFETY: a live digest context from Redis; the bytes outlive the calls.
    unsafe {
        add_bytes(md, bytes.as_ptr().cast(), bytes.len());
        for &field in fields {
            add_int(md, field as i64);
        }
        end(md);
    }
}

pub extern "C" fn compact_digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(lock) = unsafe { CompactRef::from_callback(value) } {
        let mut owner = OwnerBuf::default();
        let r = lock.record_in(&mut owner);
        let fields = [r.token, u64::from(r.holds), r.deadline_ms, r.place];
        digest_sequence(md, r.owner, &fields);
    }
}

pub extern "C" fn table_digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let Some(table) = (unsafe { HolderTable::from_callback(value) }) else {
        return;
    };
    digest_sequence(md, b"", &[u64::from(table.limit()), table.place]);
    for s in table.iter() {
        let mode = codec::mode_code(s.mode);
        let lease = [
            mode,
            s.lease.token,
            u64::from(s.lease.holds),
            s.lease.deadline_ms,
        ];
        digest_sequence(md, &s.owner, &lease);
    }
}

pub extern "C" fn compact_free(value: *mut c_void) {
    if let Some(ptr) = NonNull::new(value) {
        stats::lock_freed();
        super::arrivals::arrived(value);
        // SAFETY: Redis gives the value back to be freed, once.
        drop(unsafe { OwnedCompact::from_raw(ptr) });
    }
}

/// May run on Redis's lazyfree thread (see [`table_effort`]): it touches nothing but the
/// table and an atomic counter.
pub extern "C" fn table_free(value: *mut c_void) {
    if !value.is_null() {
        stats::lock_freed();
        super::arrivals::arrived(value);
        // SAFETY: Redis gives back a value it got from Box::into_raw, once.
        drop(unsafe { Box::from_raw(value.cast::<HolderTable>()) });
    }
}

/// What freeing a table costs: with `lazyfree-lazy-*` on, Redis frees a large one on its
/// background thread instead of the event loop.
pub extern "C" fn table_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe { HolderTable::from_callback(value) }.map_or(1, HolderTable::len)
}
