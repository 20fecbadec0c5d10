//! A gate (the `dlockgate` data type): the highest fencing token a piece of data has been
//! written under, kept where the data lives. `DLOCK.GUARD` lets a write through only for a token
//! at least that high and raises the gate to it, so a holder that lost its lock (paused past its
//! lease, partitioned) cannot write after a newer holder did.
//!
//! **Never backwards.** Every token a gate takes raises the node's fencing counter too, so the
//! counter is at least every gate's token on this node — a RESTOREd gate (and MIGRATE's target)
//! included. A gate that arrives from outside a command — RESTORE, or carried to another key by
//! RENAME, MOVE or SWAPDB — is floored at the counter the moment it arrives or moves: it then
//! stands at least as high as any gate of this node ever stood, and every token issued after the
//! move passes it. The floor is written into the value (its *place*, a fingerprint of database
//! and key, says where it stands), so every reader — GUARD, CHECK, RAISEGATE, the AOF rewrite,
//! a replica — sees the same gate. A gate never keeps a TTL ([`super::gate_watch`]); one that is
//! evicted comes back ([`super::ghosts`]); `DEL` / `UNLINK` (and FLUSHDB / FLUSHALL) is the reset; `SET` over
//! a gate leaves a string that GUARD refuses (WRONGTYPE); COPY of a gate is refused. Loading the
//! node's own RDB or AOF, or its master's, trusts the values (the counter comes back with them).
//!
//! Encoding: [`super::gate_codec`].

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use redis_module::{native_types::RedisType, raw, RedisError};

use super::places::MOVED;
use crate::node::node;
use crate::server;
use crate::wire::errors;

/// The type name, in every RDB that holds a gate: it never changes.
pub const GATE_TYPE_NAME: &str = "dlockgate";

pub use super::gate_codec::{decode, Gate, ENCODING_VERSION};

impl Gate {
    /// The gate as it must be read under a key of `place`. A gate moved here was floored when
    /// it moved ([`MOVED`]); one whose place names another key without that mark (saved by a
    /// release before moves were floored at once) is floored at the node's counter now.
    pub fn at(self, place: u64) -> Gate {
        let token = match self.place == place || self.place == MOVED {
            true => self.token,
            false => self.token.max(super::arrivals::floor()),
        };
        Gate { token, place }
    }

    /// The gate floored at the node's counter, as it stands once carried to another key.
    fn moved(self) -> Gate {
        Gate {
            token: self.token.max(super::arrivals::floor()),
            place: MOVED,
        }
    }
}

pub static GATE_TYPE: RedisType = RedisType::new(
    GATE_TYPE_NAME,
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: 4, // up to unlink2 (Redis 7.0)
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
        copy: None, // COPY of a gate is refused: a copy could stand lower than its target
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: Some(unlink),
        copy2: None,
        aux_save2: None,
    },
);

pub fn gate_type() -> *mut raw::RedisModuleType {
    *GATE_TYPE.raw_type.borrow()
}

/// The gate in a callback's value.
///
/// # Safety
/// `value` must be a `dlockgate` value (a boxed [`Gate`]) alive for the call.
unsafe fn gate_of<'a>(value: *const c_void) -> Option<&'a Gate> {
    // SAFETY: the caller's promise.
    unsafe { value.cast::<Gate>().as_ref() }
}

/// The gate in an open key; `None` when the key is empty, WRONGTYPE for any other value.
pub fn read(key: NonNull<raw::RedisModuleKey>) -> Result<Option<Gate>, RedisError> {
    match super::values::module_value(key)? {
        None => Ok(None),
        // SAFETY: a value of the gate type is a boxed Gate, alive while the key is open.
        Some((of_type, value)) if of_type == gate_type() => Ok(unsafe { gate_of(value) }.copied()),
        Some(_) => Err(errors::wrong_type()),
    }
}

/// Whether an open key holds a gate.
fn is_gate(key: NonNull<raw::RedisModuleKey>) -> bool {
    matches!(read(key), Ok(Some(_)))
}

/// Floors the gate in an open key as moved (SWAPDB carried it to another database); any other
/// value is left alone.
pub fn mark_moved(key: NonNull<raw::RedisModuleKey>) {
    if let Ok(Some((of_type, value))) = super::values::module_value(key) {
        if of_type == gate_type() {
            // SAFETY: a gate in a key opened by the caller's scan, which nothing else touches.
            if let Some(gate) = unsafe { value.cast::<Gate>().as_mut() } {
                *gate = gate.moved();
            }
        }
    }
}

/// A gate that arrived (a RESTORE, a load) is in its key: the counter takes its token, and a
/// TTL it came with (a RESTORE's, an older release's file) goes: a gate never expires
/// ([`super::gate_watch`]). Any other value is left alone.
pub fn settle_arrived(key: NonNull<raw::RedisModuleKey>) {
    let Ok(Some((of_type, value))) = super::values::module_value(key) else {
        return;
    };
    if of_type != gate_type() {
        return;
    }
    // SAFETY: a gate in a key the caller opened, only read.
    if let Some(gate) = unsafe { gate_of(value) } {
        node().raise_counter(gate.token);
    }
    super::arrivals::arrived(value);
    let (Some(get), Some(set)) = (
        crate::api!(RedisModule_GetExpire),
        crate::api!(RedisModule_SetExpire),
    ) else {
        return;
    };
    // SAFETY: a key the caller opened for writing.
    unsafe {
        if get(key.as_ptr()) != raw::REDISMODULE_NO_EXPIRE as i64 {
            set(key.as_ptr(), raw::REDISMODULE_NO_EXPIRE as i64);
        }
    }
}

/// Stores `gate` in an open key (replacing what it held).
pub fn set(key: NonNull<raw::RedisModuleKey>, gate: Gate) -> Result<(), RedisError> {
    let set = crate::api!(RedisModule_ModuleTypeSetValue).ok_or_else(errors::cannot_store)?;
    let value = Box::into_raw(Box::new(gate)).cast::<c_void>();
    // SAFETY: `key` is open for writing by the running command; the value is ours to give. The
    // gate it replaces leaves by our own hand: no unlink news for it.
    let stored = super::unlink::own_write(|| unsafe { set(key.as_ptr(), gate_type(), value) });
    if stored == raw::REDISMODULE_OK as c_int {
        super::gate_watch::watch(is_gate);
        return Ok(());
    }
    // SAFETY: not stored, so still ours, from Box::into_raw above.
    drop(unsafe { Box::from_raw(value.cast::<Gate>()) });
    Err(errors::cannot_store())
}

/// Loads a gate. The node's own data (or its master's) raises the counter to it; a gate that
/// names another key there was moved by a release that floored moves lazily, and is floored
/// now. A RESTORE is floored at the counter (and the tokens still arriving) and raises it right
/// after the command ([`super::arrivals`]; a token more than a year ahead of this node is
/// refused, as for a lock's), so the node's next grant passes it.
extern "C" fn rdb_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let gate = match decode(&mut super::rdb::RdbIn(io), encver) {
        Ok(gate) => gate,
        Err(why) => return super::rdb::refuse(io, &format!("a gate (dlockgate): {why}")),
    };
    let here = super::rdb::place_of_io(io);
    let gate = if server::is_loading() {
        node().raise_counter(gate.token);
        match gate.place == here || gate.place == MOVED || here == MOVED {
            true => gate,
            false => gate.moved(),
        }
    } else if node().check_client_token(gate.token).is_err() {
        let why = format!(
            "a gate: token {} is more than a year ahead of this node",
            gate.token
        );
        return super::rdb::refuse(io, &why);
    } else {
        Gate {
            token: gate.token.max(super::arrivals::floor()),
            place: here,
        }
    };
    super::gate_watch::watch(is_gate);
    let value = Box::into_raw(Box::new(gate)).cast();
    if !server::is_loading() {
        super::arrivals::arriving_token(value, gate.token); // the counter takes it once it is in
    }
    super::arrivals::noted(io); // and a TTL it came with goes (`drop_ttl`)
    value
}

extern "C" fn rdb_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(gate) = unsafe { gate_of(value) } {
        super::gate_codec::encode(gate, &mut super::rdb::RdbOut(io));
    }
}

/// `DLOCK.RAISEGATE key token`: the gate's effect form.
extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let (Some(gate), Some(emit)) = (unsafe { gate_of(value) }, crate::api!(RedisModule_EmitAOF))
    else {
        return;
    };
    // Written back as it stands under its key: a replay stores it there, at home.
    let here = crate::api!(RedisModule_GetDbIdFromIO).map(|db_of| {
        // SAFETY: the rewrite's IO, for this call.
        let db = unsafe { db_of(aof) };
        super::places::place(db, redis_module::RedisString::string_as_slice(key))
    });
    let standing = here.map_or(gate.moved(), |here| gate.at(here));
    let token = i64::try_from(standing.token).unwrap_or(i64::MAX);
    // SAFETY: `aof` and `key` come from Redis for this call; s = key, l = the token.
    unsafe { emit(aof, c"DLOCK.RAISEGATE".as_ptr(), c"sl".as_ptr(), key, token) };
}

/// A gate leaves its key (DEL, UNLINK, expiry, eviction, an overwrite, or the old name of a
/// RENAME or MOVE, which add the value under its new name first). It is floored here, since
/// after a RENAME or MOVE it lives on under another key; every other unlink frees it right
/// after. [`super::ghosts`] notes it too, to bring back a gate that was evicted.
extern "C" fn unlink(ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    let Some(gate) = NonNull::new(value.cast_mut().cast::<Gate>()) else {
        return;
    };
    if super::unlink::is_own_write() {
        return;
    }
    // SAFETY: our gate, on the main thread; nothing else reads or writes it during the call
    // (RENAME and MOVE hold it between two dictionary operations).
    let gate = unsafe { &mut *gate.as_ptr() };
    super::ghosts::unlinked(ctx, gate.token);
    *gate = gate.moved();
}

extern "C" fn mem_usage(_value: *const c_void) -> usize {
    std::mem::size_of::<Gate>()
}

extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    let (Some(gate), Some(add), Some(end)) = (
        unsafe { gate_of(value) },
        crate::api!(RedisModule_DigestAddLongLong),
        crate::api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    // SAFETY: a live digest context from Redis.
    unsafe {
        add(md, gate.token as i64);
        add(md, gate.place as i64);
        end(md);
    }
}

extern "C" fn free(value: *mut c_void) {
    super::arrivals::arrived(value);
    if !value.is_null() {
        // SAFETY: Redis gives back a value it got from Box::into_raw, once.
        drop(unsafe { Box::from_raw(value.cast::<Gate>()) });
    }
}
