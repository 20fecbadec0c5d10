//! The two data types a resource is stored as — `dlocklock` (one exclusive holder, the compact
//! form) and `dlockmany` (a table of holders) — with one set of callbacks generic over the
//! form ([`super::callbacks`], [`super::unlink`]), and the node counter as RDB aux data. The
//! type names are in every RDB file ever written: they never change.
//!
//! Loading trusts nothing: the module declares that it handles I/O errors (so a truncated or
//! crafted payload fails the load or the RESTORE cleanly instead of aborting the server), and
//! [`super::codec`] validates every field, deadlines included, before anything is kept.

use std::os::raw::c_int;

use redis_module::{native_types::RedisType, raw};

use super::callbacks::{aof, digest, effort, free, load, mem, save};
use super::codec::{self, ENCODING_VERSION, TABLE_ENCODING_VERSION};
use super::form::{Compact, Form, Table};
use super::rdb::{refuse, RdbIn};
use super::unlink::unlink;
use crate::node::node;

/// The compact form's type name, as `TYPE` shows it and `SCAN ... TYPE` matches it.
const TYPE_NAME: &str = "dlocklock";

/// The table form's type name.
const TABLE_TYPE_NAME: &str = "dlockmany";

/// The callbacks of form `F`'s type; the aux callbacks carry the node counter (on one type).
const fn methods<F: Form>(
    aux_load: raw::RedisModuleTypeAuxLoadFunc,
    aux_save: raw::RedisModuleTypeAuxSaveFunc,
    aux_save2: raw::RedisModuleTypeAuxSaveFunc,
) -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        // 5 adds aux_save2 (Redis 7.2+): no aux field at all until a token was issued.
        // Older servers read the methods up to the version they know and use aux_save.
        version: 5,
        rdb_load: Some(load::<F>),
        rdb_save: Some(save::<F>),
        aof_rewrite: Some(aof::<F>),
        mem_usage: Some(mem::<F>),
        digest: Some(digest::<F>),
        free: Some(free::<F>),
        aux_load,
        aux_save,
        aux_save_triggers: raw::Aux::Before as c_int,
        free_effort: Some(effort::<F>),
        unlink: None,
        copy: None, // COPY of a lock is refused ("not supported for this module key")
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: Some(unlink::<F>),
        copy2: None,
        aux_save2,
    }
}

/// One exclusive holder. Carries the node counter as aux data.
pub static LOCK_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
    ENCODING_VERSION,
    methods::<Compact>(Some(aux_load), Some(aux_save), Some(aux_save2)),
);

/// Several holders.
pub static TABLE_TYPE: RedisType = RedisType::new(
    TABLE_TYPE_NAME,
    TABLE_ENCODING_VERSION,
    methods::<Table>(None, None, None),
);

pub fn lock_type() -> *mut raw::RedisModuleType {
    *LOCK_TYPE.raw_type.borrow()
}

pub fn table_type() -> *mut raw::RedisModuleType {
    *TABLE_TYPE.raw_type.borrow()
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
            refuse(
                io,
                &format!("the saved fencing counter (dlocklock aux data): {why}"),
            );
            raw::REDISMODULE_ERR as c_int
        }
    }
}
