//! Atomic slot migration (Redis 8.4+ `CLUSTER MIGRATION IMPORT`, Valkey 9+ `CLUSTER
//! MIGRATESLOTS`): the server moves a slot's keys and then its ownership by itself, without the
//! `MIGRATING` / `IMPORTING` states and without `MIGRATE`, so no keyspace event tells the module
//! that a key it queues waiters on is no longer its own, and the moved keys are trimmed here
//! without one either. Left alone, a waiter parked on the source would wait out its timeout (or
//! forever with `WAIT 0`) for a lock that lives on the target.
//!
//! So the moment a slot leaves this node (the migration completed, or a trim of the slot starts:
//! Redis also trims the partial import of a failed migration on its target), every key of the
//! slot that has module state loses it: its waiters are answered with the redirect a client
//! would get for the key (`MOVED slot host:port`, as [`super::cluster`] answers), its handoff
//! timer is stopped and its tentative mark dropped. Clients follow the redirect and queue again on
//! the new owner with their ticket.
//!
//! The locks themselves travel as keys (the target's `restore` / `loaded` events raise its
//! counter to each token and set each key's expiry to its deadline), and grants, extensions and
//! releases made on the source while the slot is being copied reach the target through the
//! migration's stream of writes, as the module's effects (`DLOCK.APPLY`, `DEL`).
//! The module builds effects only when something can receive them, and a migration's target is
//! such a receiver the server does not otherwise announce: so the migration's start switches
//! effects on. (Without it, locks granted during the copy were missing on the target: their
//! holders' extensions answered "not held" after the move.)

use std::os::raw::{c_char, c_int, c_void};
use std::ptr::NonNull;

use redis_module::{raw, Context, RedisValue};

use super::parked::Outcome;
use super::queues;
use crate::server::{self, SlotMigration};

// Redis 8.4+ (redismodule.h): server events and sub-events.
const REDIS_SLOT_MIGRATION: u64 = 18;
const REDIS_SLOT_MIGRATION_TRIM: u64 = 19;
const REDIS_MIGRATE_STARTED: u64 = 3;
const REDIS_MIGRATE_COMPLETED: u64 = 5;
const REDIS_TRIM_STARTED: u64 = 0;
const REDIS_TRIM_BACKGROUND: u64 = 2;
// Valkey 9+ (valkeymodule.h).
const VALKEY_ATOMIC_SLOT_MIGRATION: u64 = 19;
const VALKEY_EXPORT_STARTED: u64 = 1;
const VALKEY_EXPORT_COMPLETED: u64 = 5;
/// `REDISMODULE_NODE_ID_LEN` + 1.
const NODE_ID_SIZE: usize = 41;

/// `RedisModuleSlotRange`.
#[repr(C)]
struct RedisSlotRange {
    start: u16,
    end: u16,
}

/// `RedisModuleSlotRangeArray`: a count, then the ranges inline.
#[repr(C)]
struct RedisSlotRanges {
    count: i32,
    ranges: [RedisSlotRange; 0],
}

/// `RedisModuleClusterSlotMigrationInfoV1`.
#[repr(C)]
struct RedisMigrationInfo {
    version: u64,
    source_node_id: [c_char; NODE_ID_SIZE],
    destination_node_id: [c_char; NODE_ID_SIZE],
    task_id: *const c_char,
    slots: *const RedisSlotRanges,
}

/// `RedisModuleClusterSlotMigrationTrimInfoV1`.
#[repr(C)]
struct RedisTrimInfo {
    version: u64,
    slots: *const RedisSlotRanges,
}

/// `ValkeyModuleSlotRange`.
#[repr(C)]
struct ValkeySlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`.
#[repr(C)]
struct ValkeyMigrationInfo {
    version: u64,
    job_name: [c_char; NODE_ID_SIZE],
    slot_ranges: *const ValkeySlotRange,
    num_slot_ranges: u32,
}

type ServerEvent = extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

/// Subscribes to the server's slot-migration events, where it has them; called once at load.
pub fn watch(ctx: &Context) -> Result<(), &'static str> {
    let events: &[(u64, ServerEvent)] = match server::slot_migration(ctx) {
        SlotMigration::Redis => &[
            (REDIS_SLOT_MIGRATION, on_redis_migration),
            (REDIS_SLOT_MIGRATION_TRIM, on_redis_trim),
        ],
        SlotMigration::Valkey => &[(VALKEY_ATOMIC_SLOT_MIGRATION, on_valkey_migration)],
        SlotMigration::None => &[],
    };
    for &(id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        if raw::subscribe_to_server_event(ctx.ctx, event, Some(callback)) != raw::Status::Ok {
            return Err("cannot subscribe to slot migration events");
        }
    }
    Ok(())
}

extern "C" fn on_redis_migration(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent == REDIS_MIGRATE_STARTED {
        return crate::replication::propagation::switch_on();
    }
    let Some(info) = NonNull::new(data.cast::<RedisMigrationInfo>()) else {
        return;
    };
    if subevent != REDIS_MIGRATE_COMPLETED {
        return;
    }
    // SAFETY: Redis passes the migration info for the duration of the call.
    let info = unsafe { info.as_ref() };
    // SAFETY: as above; the ranges live as long as the info.
    let ranges = unsafe { redis_ranges(info.slots) };
    slots_left(&Context::new(ctx), &ranges);
}

extern "C" fn on_redis_trim(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let Some(info) = NonNull::new(data.cast::<RedisTrimInfo>()) else {
        return;
    };
    if subevent != REDIS_TRIM_STARTED && subevent != REDIS_TRIM_BACKGROUND {
        return;
    }
    // SAFETY: Redis passes the trim info, and its ranges, for the duration of the call.
    let ranges = unsafe { redis_ranges(info.as_ref().slots) };
    slots_left(&Context::new(ctx), &ranges);
}

extern "C" fn on_valkey_migration(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent == VALKEY_EXPORT_STARTED {
        return crate::replication::propagation::switch_on();
    }
    let Some(info) = NonNull::new(data.cast::<ValkeyMigrationInfo>()) else {
        return;
    };
    if subevent != VALKEY_EXPORT_COMPLETED {
        return;
    }
    // SAFETY: Valkey passes the migration info for the duration of the call.
    let info = unsafe { info.as_ref() };
    let ranges = if info.slot_ranges.is_null() {
        Vec::new()
    } else {
        // SAFETY: `num_slot_ranges` ranges at `slot_ranges`, alive for the call.
        unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) }
            .iter()
            .map(|r| (r.start as i64, r.end as i64))
            .collect()
    };
    slots_left(&Context::new(ctx), &ranges);
}

/// The inclusive slot ranges of a Redis `RedisModuleSlotRangeArray`.
///
/// # Safety
/// `slots` is null or points at a live array with `count` ranges after it.
unsafe fn redis_ranges(slots: *const RedisSlotRanges) -> Vec<(i64, i64)> {
    // SAFETY: the caller's promise: null or a live array.
    let Some(slots) = (unsafe { slots.as_ref() }) else {
        return Vec::new();
    };
    let count = usize::try_from(slots.count).unwrap_or(0);
    // SAFETY: the caller's promise: `count` ranges follow the count, alive for the call.
    unsafe { std::slice::from_raw_parts(slots.ranges.as_ptr(), count) }
        .iter()
        .map(|r| (i64::from(r.start), i64::from(r.end)))
        .collect()
}

/// The slots in `ranges` are no longer this node's: every key of them with module state loses
/// it, and its waiters are redirected to the slot's owner now.
fn slots_left(ctx: &Context, ranges: &[(i64, i64)]) {
    if queues::idle() || ranges.is_empty() {
        return;
    }
    let leaving: Vec<(queues::QueueKey, i64)> = queues::keys()
        .into_iter()
        .filter_map(|place| Some((key_slot(ctx, &place.1)?, place)))
        .filter(|(slot, _)| {
            ranges
                .iter()
                .any(|(start, end)| (start..=end).contains(&slot))
        })
        .map(|(slot, place)| (place, slot))
        .collect();
    if leaving.is_empty() {
        return;
    }
    let nodes = super::cluster::nodes(ctx);
    for (place, slot) in leaving {
        let (waiters, timers) = queues::take_where(|p| *p == place);
        for id in timers {
            let _ = ctx.stop_timer::<queues::QueueKey>(id);
        }
        let redirect = nodes
            .as_deref()
            .and_then(|nodes| super::cluster::owner_redirect(nodes, slot))
            .unwrap_or_else(|| format!("TRYAGAIN slot {slot} moved to another node; retry"));
        for waiter in waiters {
            waiter.handle.answer(Outcome::Failed(redirect.clone()));
        }
    }
}

fn key_slot(ctx: &Context, key: &[u8]) -> Option<i64> {
    match ctx.call("CLUSTER", &[b"KEYSLOT".as_slice(), key]) {
        Ok(RedisValue::Integer(slot)) => Some(slot),
        _ => None,
    }
}
