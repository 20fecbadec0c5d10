//! The resource value in an open key, whichever form it has ([`super::form::Value`]), and
//! storing one.

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use redis_module::{raw, RedisError};

use super::compact::{CompactMut, OwnedCompact, Record};
use super::form::Value;
use super::table::HolderTable;
use super::types::{lock_type, table_type};
use crate::stats;
use crate::wire::errors;

/// The module value in an open key, with its type; `None` if the key is empty, WRONGTYPE for a
/// value that is not a module's. What every reader of the module's types (locks, gates) asks.
pub fn module_value(
    key: NonNull<raw::RedisModuleKey>,
) -> Result<Option<(*mut raw::RedisModuleType, *mut c_void)>, RedisError> {
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
    // SAFETY: as above; GetType and GetValue are valid for module keys.
    Ok(Some(unsafe {
        (get_type(key.as_ptr()), get_value(key.as_ptr()))
    }))
}

/// The dlock value in an open key; `None` if the key is empty, WRONGTYPE for any other type.
pub fn value_of(key: NonNull<raw::RedisModuleKey>) -> Result<Option<Value>, RedisError> {
    let Some((module_type, value)) = module_value(key)? else {
        return Ok(None);
    };
    let wrap = if module_type == lock_type() {
        Value::Compact
    } else if module_type == table_type() {
        Value::Table
    } else {
        return Err(errors::wrong_type());
    };
    Ok(NonNull::new(value).map(wrap))
}

/// Stores a value of `of_type` in an open key (replacing what it held); `Err` gives it back.
fn set(
    key: NonNull<raw::RedisModuleKey>,
    of_type: *mut raw::RedisModuleType,
    value: *mut c_void,
) -> Result<(), ()> {
    let set = crate::api!(RedisModule_ModuleTypeSetValue).ok_or(())?;
    // SAFETY: `key` is open for writing by the running command; the value is ours to give.
    let stored = super::unlink::own_write(|| unsafe { set(key.as_ptr(), of_type, value) });
    if stored == raw::REDISMODULE_OK as c_int {
        stats::lock_created();
        return Ok(());
    }
    Err(())
}

/// Stores a plain lock in an open key; on failure the lock is freed.
pub fn set_compact(
    key: NonNull<raw::RedisModuleKey>,
    lock: OwnedCompact,
) -> Result<(), RedisError> {
    let raw_lock = lock.into_raw();
    set(key, lock_type(), raw_lock).map_err(|()| {
        if let Some(ptr) = NonNull::new(raw_lock) {
            // SAFETY: not stored, so still ours; `into_raw` came from a live allocation.
            drop(unsafe { OwnedCompact::from_raw(ptr) });
        }
        errors::cannot_store()
    })
}

/// Stores a table in an open key.
pub fn set_table(key: NonNull<raw::RedisModuleKey>, table: HolderTable) -> Result<(), RedisError> {
    let raw_table = Box::into_raw(Box::new(table)).cast::<c_void>();
    set(key, table_type(), raw_table).map_err(|()| {
        // SAFETY: not stored, so still ours, from Box::into_raw above.
        drop(unsafe { Box::from_raw(raw_table.cast::<HolderTable>()) });
        errors::cannot_store()
    })
}

/// A table in an open key, to change it.
///
/// # Safety
/// `value` must be the `dlockmany` value of an open key, that nothing else reads or writes for
/// the borrow.
pub unsafe fn table_mut<'a>(value: NonNull<c_void>) -> &'a mut HolderTable {
    // SAFETY: the caller's promise.
    unsafe { &mut *value.as_ptr().cast::<HolderTable>() }
}

/// A plain lock in an open key, to change it in place.
///
/// # Safety
/// `value` must be the `dlocklock` value of an open key, that nothing else reads or writes for
/// the borrow.
pub unsafe fn compact_mut<'a>(value: NonNull<c_void>) -> CompactMut<'a> {
    // SAFETY: the caller's promise is `CompactMut::new`'s contract.
    unsafe { CompactMut::new(value) }
}

/// A table of one exclusive holder that arrived whole (a RESTORE, or a file another path wrote)
/// becomes the plain lock it is, as a write would have left it: the form follows from the
/// holders, whatever brought them. The key's TTL is the caller's to set next.
pub fn settle_form(key: NonNull<raw::RedisModuleKey>) {
    let Ok(Some(Value::Table(ptr))) = value_of(key) else {
        return;
    };
    // SAFETY: a table in an open key, only read here; the lock below is built before it goes.
    let table = unsafe { &*ptr.as_ptr().cast::<HolderTable>() };
    let sole = match (table.limit(), table.exclusive()) {
        (0, Some(x)) if table.len() == 1 => x,
        _ => return,
    };
    let record = Record {
        owner: &sole.owner,
        token: sole.lease.token,
        holds: sole.lease.holds,
        deadline_ms: sole.lease.deadline_ms,
        place: table.place,
    };
    if let Some(lock) = OwnedCompact::new(&record) {
        let _ = set_compact(key, lock); // on failure the table stays, as it was
    }
}
