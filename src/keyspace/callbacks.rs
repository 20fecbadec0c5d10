//! The callbacks of a resource's data types, written once for both storage forms (generic over
//! [`Form`], see [`super::types`]): RDB load and save, the AOF rewrite (the same `DLOCK.APPLY`
//! effects a write replicates), memory, digest, free and its effort.

use std::os::raw::{c_int, c_longlong, c_void};
use std::ptr::NonNull;

use dlock_core::{Holder, Mode};
use redis_module::raw;

use super::codec;
use super::form::{Form, Value};
use super::holder::mode_word;
use super::places::MOVED;
use super::rdb::{self, RdbOut};
use crate::node::node;
use crate::{server, stats};

/// The value Redis passes to a callback of `F`'s type.
fn value_of<F: Form>(value: *const c_void) -> Option<Value> {
    NonNull::new(value.cast_mut()).map(F::value)
}

/// Loads one value, refusing anything malformed (null, with a log line) and, from a RESTORE, a
/// token more than a year ahead of this node (the server's own data, while it loads, is
/// trusted).
pub extern "C" fn load<F: Form>(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let bounds = rdb::arrival_bounds(server::is_loading());
    let value = match F::load(io, encver, bounds) {
        Ok(value) => value,
        Err(why) => return rdb::refuse(io, &why),
    };
    // SAFETY: just loaded, ours alone.
    let newest = unsafe { value.newest_token() };
    if !server::is_loading() && node().check_client_token(newest).is_err() {
        // SAFETY: never handed to Redis.
        unsafe { value.free() };
        let why = format!("a lock value: token {newest} is more than a year ahead of this node");
        return rdb::refuse(io, &why);
    }
    arrived(io, newest, value.address());
    value.address().cast_mut()
}

/// A value is loaded (at `value`) and about to enter its key: the key gets the key-TTL rule
/// once it is in ([`super::arrivals`]). While the server loads its own data the node counter
/// rises to the value's newest token now (before any client is served); after a RESTORE, once
/// Redis has kept the value (it may still refuse it: a refused RESTORE changes nothing), its
/// token arriving meanwhile.
fn arrived(io: *mut raw::RedisModuleIO, newest: u64, value: *const c_void) {
    if server::is_loading() {
        node().raise_counter(newest);
    } else {
        super::arrivals::arriving_token(value, newest);
    }
    stats::lock_created();
    super::arrivals::noted(io);
}

pub extern "C" fn save<F: Form>(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    if let Some(value) = value_of::<F>(value) {
        // SAFETY: Redis passes one of our values, alive for this call.
        unsafe { value.save(&mut RdbOut(io)) };
    }
}

/// One `DLOCK.APPLY key owner token holds PXAT deadline MODE` per holder (Redis appends the
/// key's `PEXPIREAT` itself), as a replica applies a write's effect. A moved value is dropped:
/// it is not held anywhere.
pub extern "C" fn aof<F: Form>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let (Some(value), Some(emit)) = (value_of::<F>(value), crate::api!(RedisModule_EmitAOF)) else {
        return;
    };
    // SAFETY: Redis passes one of our values, alive for this call.
    let (place, limit) = unsafe { (value.place(), value.limit()) };
    if place == MOVED {
        return;
    }
    // SAFETY: as above.
    unsafe { value.each_holder(|h| emit_apply(emit, aof, key, &h, limit)) };
}

type EmitAof = unsafe extern "C" fn(
    *mut raw::RedisModuleIO,
    *const std::os::raw::c_char,
    *const std::os::raw::c_char,
    ...
);

/// One holder's `DLOCK.APPLY` into the AOF; a permit adds its semaphore's limit.
fn emit_apply(
    emit: EmitAof,
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    h: &Holder<'_>,
    limit: u32,
) {
    let int = |v: u64| c_longlong::try_from(v).unwrap_or(c_longlong::MAX);
    let (owner, len, holds) = (h.owner.as_ptr(), h.owner.len(), c_longlong::from(h.holds));
    let (name, pxat, word) = (c"DLOCK.APPLY".as_ptr(), c"PXAT".as_ptr(), mode_word(h.mode));
    let (token, deadline) = (int(h.token), int(h.deadline_ms));
    // SAFETY: `aof` and `key` come from Redis for this call; the formats match the arguments
    // (s: the key, b: owner pointer and length, l: integers, c: static C strings).
    unsafe {
        match h.mode {
            Mode::Permit => emit(
                aof,
                name,
                c"sbllclcl".as_ptr(),
                key,
                owner,
                len,
                token,
                holds,
                pxat,
                deadline,
                word.as_ptr(),
                c_longlong::from(limit),
            ),
            _ => emit(
                aof,
                name,
                c"sbllclc".as_ptr(),
                key,
                owner,
                len,
                token,
                holds,
                pxat,
                deadline,
                word.as_ptr(),
            ),
        }
    }
}

pub extern "C" fn mem<F: Form>(value: *const c_void) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    value_of::<F>(value).map_or(0, |v| unsafe { v.allocated_size() })
}

/// Adds one sequence of fields to a digest: `DEBUG DIGEST` xors the sequences, so holders
/// digest alike in any order, and two values digest alike only if every field agrees.
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

/// The resource's kind and place, then each holder: the same resource digests alike in either
/// form.
pub extern "C" fn digest<F: Form>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    let Some(value) = value_of::<F>(value) else {
        return;
    };
    // SAFETY: Redis passes one of our values, alive for this call.
    unsafe {
        digest_sequence(md, b"", &[u64::from(value.limit()), value.place()]);
        value.each_holder(|h| {
            let lease = [
                codec::mode_code(h.mode),
                h.token,
                u64::from(h.holds),
                h.deadline_ms,
            ];
            digest_sequence(md, h.owner, &lease);
        });
    }
}

/// May run on Redis's lazyfree thread (see [`effort`]): it touches nothing but the value, an
/// atomic counter and the arrivals' own lock.
pub extern "C" fn free<F: Form>(value: *mut c_void) {
    if let Some(v) = value_of::<F>(value) {
        stats::lock_freed();
        super::arrivals::arrived(value);
        // SAFETY: Redis gives the value back to be freed, once.
        unsafe { v.free() };
    }
}

/// What freeing a value costs (its holders): with `lazyfree-lazy-*` on, Redis frees a large
/// table on its background thread instead of the event loop.
pub extern "C" fn effort<F: Form>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    // SAFETY: Redis passes one of our values, alive for this call.
    value_of::<F>(value).map_or(1, |v| unsafe { v.len() })
}
