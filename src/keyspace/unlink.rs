//! A lock value leaving its key: the data types' `unlink` callback, which Redis calls on the main
//! thread for every way a value leaves a key — DEL, UNLINK, expiry, eviction, an overwrite,
//! RESTORE ... REPLACE, and the old name of a RENAME or MOVE (which add the value under its new
//! name first, then unlink it from the old one). This is how the module hears of lock keys that
//! go away or move without watching the keyspace: a `DEL` or `SET ... PX` of any other key costs
//! it nothing.
//!
//! Three things happen here:
//! - a lease that had ended counts as expired (`INFO dlock`);
//! - the value is marked moved ([`super::places::MOVED`]): after RENAME or MOVE it lives on under another
//!   key and must never be held there, nor again if moved back (see [`super::moves`]); every
//!   other unlink frees the value right after, so the mark is harmless;
//! - the layer above hears the key's database and name, to hand the lock to its waiters.
//!
//! None of it applies when a dlock command replaces or deletes a value itself ([`own_write`]):
//! that command does its own bookkeeping.

use std::cell::Cell;
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::OnceLock;

use redis_module::raw;

use super::form::Form;
use crate::{server, stats};

/// What the layer above does when a lock key leaves other than by a dlock command.
static ON_LEFT: OnceLock<fn(i32, &[u8])> = OnceLock::new();

thread_local! {
    /// A dlock command is storing or deleting a value itself (see [`own_write`]).
    static OWN_WRITE: Cell<bool> = const { Cell::new(false) };
}

/// Installs the hook called with the database and name of a lock key that left; once, at load.
pub fn on_key_left(hook: fn(i32, &[u8])) {
    let _ = ON_LEFT.set(hook);
}

/// Runs `f`, a dlock command replacing or deleting a stored value, without the unlink news.
pub fn own_write<R>(f: impl FnOnce() -> R) -> R {
    let before = OWN_WRITE.replace(true);
    let result = f();
    OWN_WRITE.set(before);
    result
}

/// Whether a dlock command is storing or deleting a value itself right now.
pub fn is_own_write() -> bool {
    OWN_WRITE.get()
}

/// A resource leaves its key (either form): the holders whose lease had ended count as
/// expired.
pub extern "C" fn unlink<F: Form>(ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    let Some(value) = NonNull::new(value.cast_mut()).map(F::value) else {
        return;
    };
    // SAFETY: Redis passes one of our values, alive for this call.
    stats::count_n(&stats::EXPIRED, unsafe { value.ended(server::now_ms()) });
    if !OWN_WRITE.get() {
        // SAFETY: our value, on the main thread; nothing else reads or writes it during the
        // call (RENAME and MOVE hold it between two dictionary operations).
        unsafe { value.mark_moved() };
        left(ctx);
    }
}

fn left(ctx: *mut raw::RedisModuleKeyOptCtx) {
    let (Some(hook), Some((db, name))) = (ON_LEFT.get(), key_of(ctx)) else {
        return;
    };
    hook(db, name);
    super::observers::left(db, name);
}

/// The database and name of the key an unlink callback is about.
pub fn key_of<'a>(ctx: *mut raw::RedisModuleKeyOptCtx) -> Option<(i32, &'a [u8])> {
    let (Some(name_of), Some(db_of)) = (
        crate::api!(RedisModule_GetKeyNameFromOptCtx),
        crate::api!(RedisModule_GetDbIdFromOptCtx),
    ) else {
        return None;
    };
    // SAFETY: the callback's key context, valid for this call (the name lives as long).
    let (name, db) = unsafe { (name_of(ctx), db_of(ctx)) };
    (!name.is_null()).then(|| {
        (
            db,
            redis_module::RedisString::string_as_slice(name.cast_mut()),
        )
    })
}
