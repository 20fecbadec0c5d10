//! The RDB side of loading and saving a value, for every data type of the module (both storage
//! forms of a resource, and gates): the loader and saver as the codecs' field source and sink,
//! the bounds an arriving value is held to, the place of a version-1 value, and refusing a
//! value with a log line.

use std::ffi::CString;
use std::os::raw::c_void;

use redis_module::raw;

use super::codec::{Bounds, Sink, Source};
use super::places::{place, MOVED};
use crate::config;
use crate::server;
use crate::wire::limits::{CLOCK_SLACK_MS, LIMIT_MS};

/// The RDB loader as a field source (`None` on a short read or a wrong field marker).
pub struct RdbIn(pub *mut raw::RedisModuleIO);

impl Source for RdbIn {
    type Bytes = redis_module::RedisBuffer;
    fn unsigned(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }
    fn bytes(&mut self) -> Option<redis_module::RedisBuffer> {
        raw::load_string_buffer(self.0).ok()
    }
}

pub struct RdbOut(pub *mut raw::RedisModuleIO);

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

/// Refuses the value being loaded (the load or the RESTORE fails cleanly), with a log line
/// unless too many came too fast ([`super::refusals`]).
pub fn refuse(io: *mut raw::RedisModuleIO, why: &str) -> *mut c_void {
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

/// The place of a version-1 lock, computed from the key the loader is filling.
pub fn place_of_io(io: *mut raw::RedisModuleIO) -> u64 {
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
