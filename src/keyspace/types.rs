//! The two data types a resource is stored as — `dlocklock` (one exclusive holder, the compact
//! form) and `dlockmany` (a table of holders) — and their callbacks: RDB load and save, the AOF
//! rewrite, digest, memory, free, the count of leases that ended unreleased, and the node
//! counter as RDB aux data. The type names are in every RDB file ever written: they never
//! change.
//!
//! Loading trusts nothing: the module declares that it handles I/O errors (so a truncated or
//! crafted payload fails the load or the RESTORE cleanly instead of aborting the server), and
//! [`codec`] validates every field, deadlines included, before anything is kept.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};

use redis_module::{native_types::RedisType, raw};

use super::callbacks::*;
use super::codec::{self, Bounds, Sink, Source, ENCODING_VERSION, TABLE_ENCODING_VERSION};
use super::compact::{CompactRef, OwnedCompact, Record};
use super::owner::OwnerBuf;
use super::table::HolderTable;
use super::unlink::{compact_unlink, table_unlink};
use super::{place, MOVED};
use crate::node::node;
use crate::wire::limits::{CLOCK_SLACK_MS, LIMIT_MS};
use crate::{config, server, stats};

macro_rules! methods {
    ($load:ident, $save:ident, $aof:ident, $mem:ident, $digest:ident, $free:ident, $unlink:ident, $effort:expr, $aux_save:expr, $aux_load:expr, $aux_save2:expr) => {
        raw::RedisModuleTypeMethods {
            // 5 adds aux_save2 (Redis 7.2+): no aux field at all until a token was issued.
            // Older servers read the methods up to the version they know and use aux_save.
            version: 5,
            rdb_load: Some($load),
            rdb_save: Some($save),
            aof_rewrite: Some($aof),
            mem_usage: Some($mem),
            digest: Some($digest),
            free: Some($free),
            aux_load: $aux_load,
            aux_save: $aux_save,
            aux_save_triggers: raw::Aux::Before as c_int,
            free_effort: $effort,
            unlink: None,
            copy: None, // COPY of a lock is refused ("not supported for this module key")
            defrag: None,
            mem_usage2: None,
            free_effort2: None,
            unlink2: Some($unlink),
            copy2: None,
            aux_save2: $aux_save2,
        }
    };
}

/// One exclusive holder. Carries the node counter as aux data.
pub static LOCK_TYPE: RedisType = RedisType::new(
    super::TYPE_NAME,
    ENCODING_VERSION,
    methods!(
        compact_load,
        compact_save,
        compact_aof,
        compact_mem,
        compact_digest,
        compact_free,
        compact_unlink,
        None,
        Some(aux_save),
        Some(aux_load),
        Some(aux_save2)
    ),
);

/// Several holders.
pub static TABLE_TYPE: RedisType = RedisType::new(
    super::TABLE_TYPE_NAME,
    TABLE_ENCODING_VERSION,
    methods!(
        table_load,
        table_save,
        table_aof,
        table_mem,
        table_digest,
        table_free,
        table_unlink,
        Some(table_effort),
        None,
        None,
        None
    ),
);

pub fn lock_type() -> *mut raw::RedisModuleType {
    *LOCK_TYPE.raw_type.borrow()
}

pub fn table_type() -> *mut raw::RedisModuleType {
    *TABLE_TYPE.raw_type.borrow()
}

/// The RDB loader as a field source (`None` on a short read or a wrong field marker).
pub(super) struct RdbIn(pub(super) *mut raw::RedisModuleIO);

impl Source for RdbIn {
    type Bytes = redis_module::RedisBuffer;
    fn unsigned(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }
    fn bytes(&mut self) -> Option<redis_module::RedisBuffer> {
        raw::load_string_buffer(self.0).ok()
    }
}

pub(super) struct RdbOut(pub(super) *mut raw::RedisModuleIO);

impl Sink for RdbOut {
    fn unsigned(&mut self, value: u64) {
        raw::save_unsigned(self.0, value);
    }
    fn bytes(&mut self, value: &[u8]) {
        raw::save_slice(self.0, value);
    }
}

/// The latest deadline a value arriving now may carry: what this node could grant now
/// (`dlock.max-ttl-ms`), plus [`CLOCK_SLACK_MS`] for the clocks of the node that wrote it and
/// this one. While the server loads its own data or its master's, the longest setting allowed
/// instead: a lowered `max-ttl-ms` must not make a restart fail.
pub fn arrival_bounds(trusted: bool) -> Bounds {
    let ttl = if trusted {
        LIMIT_MS
    } else {
        config::max_ttl_ms()
    };
    let ttl = u64::try_from(ttl)
        .unwrap_or(0)
        .saturating_add(CLOCK_SLACK_MS);
    Bounds {
        latest_deadline_ms: server::now_ms().saturating_add(ttl),
    }
}

/// A RESTORE carrying a token more than a year ahead of this node is refused (the server's own
/// data, while it loads, is trusted).
fn acceptable(io: *mut raw::RedisModuleIO, newest: u64) -> bool {
    if server::is_loading() || node().check_client_token(newest).is_ok() {
        return true;
    }
    let why = format!("a lock value: token {newest} is more than a year ahead of this node");
    refuse(io, &why);
    false
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

/// Refuses the value being loaded (the load or the RESTORE fails cleanly), with a log line
/// unless too many came too fast ([`super::refusals`]).
pub(super) fn refuse(io: *mut raw::RedisModuleIO, why: &str) -> *mut c_void {
    let Some(left_out) = super::refusals::should_log(std::time::Instant::now()) else {
        return std::ptr::null_mut();
    };
    let more = match left_out {
        0 => String::new(),
        n => format!(" ({n} more refused since the last line, not logged)"),
    };
    let (Some(log), Ok(message)) = (
        crate::api!(RedisModule_LogIOError),
        CString::new(format!("dlock: refusing {why}{more}")),
    ) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a live loader, a static format and a NUL-terminated message.
    unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr()) };
    std::ptr::null_mut()
}

/// Loads one plain lock, refusing anything malformed (null, with a log line). A version-1 lock
/// has no deadline of its own: it gets the latest one allowed, and the key's TTL rules below it.
extern "C" fn compact_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let bounds = arrival_bounds(server::is_loading());
    let decoded = match codec::decode(&mut RdbIn(io), encver, bounds) {
        Ok(decoded) => decoded,
        Err(why) => return refuse(io, &format!("a lock value: {why}")),
    };
    if !acceptable(io, decoded.token) {
        return std::ptr::null_mut();
    }
    let record = Record {
        owner: decoded.owner.as_ref(),
        token: decoded.token,
        holds: decoded.holds,
        deadline_ms: decoded.deadline_ms.unwrap_or(bounds.latest_deadline_ms),
        place: decoded.place.unwrap_or_else(|| place_of_io(io)),
    };
    let Some(mut lock) = OwnedCompact::new(&record) else {
        return std::ptr::null_mut();
    };
    lock.set_follows_key_ttl(decoded.deadline_ms.is_none());
    let value = lock.into_raw();
    arrived(io, decoded.token, value);
    value
}

/// Loads one table, refusing anything malformed.
extern "C" fn table_load(io: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let bounds = arrival_bounds(server::is_loading());
    let table = match codec::decode_table(&mut RdbIn(io), encver, bounds) {
        Ok(table) => table,
        Err(why) => return refuse(io, &format!("a shared lock or semaphore value: {why}")),
    };
    if !acceptable(io, table.newest_token()) {
        return std::ptr::null_mut();
    }
    let newest = table.newest_token();
    let value = Box::into_raw(Box::new(table)).cast();
    arrived(io, newest, value);
    value
}

/// The place of a version-1 lock, computed from the key the loader is filling.
pub(super) fn place_of_io(io: *mut raw::RedisModuleIO) -> u64 {
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

extern "C" fn compact_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(lock) = unsafe { CompactRef::from_callback(value) } {
        codec::encode(&lock.record_in(&mut OwnerBuf::default()), &mut RdbOut(io));
    }
}

extern "C" fn table_save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes one of our values, alive for this call.
    if let Some(table) = unsafe { HolderTable::from_callback(value) } {
        codec::encode_table(table, &mut RdbOut(io));
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
            refuse(io, &format!("the saved fencing counter: {why}"));
            raw::REDISMODULE_ERR as c_int
        }
    }
}
