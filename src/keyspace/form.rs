//! The two storage forms behind one face. A resource of one exclusive holder lives compact
//! ([`super::compact`], the `dlocklock` type); any other in a table ([`super::table`], the
//! `dlockmany` type). [`Value`] reads either as a resource — where it was granted, its kind,
//! its holders, its newest token and last lease end — and does the few things only a form
//! knows (its RDB encoding, its size, how it is freed), so that the callbacks, the TTL rule and
//! the moves are each written once. [`Form`] names a form as a type, for the callbacks Redis
//! calls per data type.

use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;

use dlock_core::{Holder, Mode};
use redis_module::raw;

use super::codec::{self, Bounds, Sink};
use super::compact::{CompactMut, CompactRef, OwnedCompact, Record};
use super::owner::OwnerBuf;
use super::places::MOVED;
use super::rdb::{self, RdbIn};
use super::table::HolderTable;

/// A resource value of the module (either form): where Redis keeps it, and which form it is.
#[derive(Clone, Copy)]
pub enum Value {
    Compact(NonNull<c_void>),
    Table(NonNull<c_void>),
}

/// The value as one of its two forms, borrowed.
enum Read<'a> {
    One(CompactRef<'a>),
    Many(&'a HolderTable),
}

impl Value {
    /// Where the value lives (what [`super::arrivals`] knows it by).
    pub fn address(self) -> *const c_void {
        match self {
            Value::Compact(ptr) | Value::Table(ptr) => ptr.as_ptr(),
        }
    }

    /// # Safety
    /// The value must be alive, and nothing may write it while the borrow lasts.
    unsafe fn read<'a>(self) -> Read<'a> {
        match self {
            // SAFETY: the caller's promise.
            Value::Compact(ptr) => Read::One(unsafe { CompactRef::new(ptr) }),
            // SAFETY: the caller's promise; a `dlockmany` value is a boxed table.
            Value::Table(ptr) => Read::Many(unsafe { &*ptr.as_ptr().cast::<HolderTable>() }),
        }
    }

    /// Where the resource was granted ([`super::places::place`]), [`MOVED`] once moved.
    ///
    /// # Safety
    /// As for every read: a live value nothing writes during the call.
    pub unsafe fn place(self) -> u64 {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => lock.place(),
            Read::Many(table) => table.place,
        }
    }

    /// A semaphore's limit; 0 for a lock (one exclusive holder is a lock).
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn limit(self) -> u32 {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(_) => 0,
            Read::Many(table) => table.limit(),
        }
    }

    /// Stored holders, ended leases included.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn len(self) -> usize {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(_) => 1,
            Read::Many(table) => table.len(),
        }
    }

    /// The largest token stored (what the node counter rises to when the value arrives).
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn newest_token(self) -> u64 {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => lock.token(),
            Read::Many(table) => table.newest_token(),
        }
    }

    /// The latest lease end stored (the key's TTL), 0 for none.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn last_deadline(self) -> u64 {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => lock.deadline_ms(),
            Read::Many(table) => table.last_deadline().unwrap_or(0),
        }
    }

    /// How many stored leases ended by `now_ms`.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn ended(self, now_ms: u64) -> usize {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => usize::from(lock.deadline_ms() <= now_ms),
            Read::Many(table) => table.ended(now_ms),
        }
    }

    /// Whether the key's TTL, when earlier, is the lease's end (a version-1 lock, or an AOF's
    /// `DLOCK.APPLY` without `PXAT`, until [`super::ttl`] settles it): only ever one holder.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn follows_key_ttl(self) -> bool {
        // SAFETY: the caller's promise.
        matches!(unsafe { self.read() }, Read::One(lock) if lock.follows_key_ttl())
    }

    /// Calls `f` with every stored holder (ended leases included), in no particular order.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn each_holder(self, mut f: impl FnMut(Holder<'_>)) {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => {
                let mut owner = OwnerBuf::default();
                let r = lock.record_in(&mut owner);
                f(Holder {
                    owner: r.owner,
                    mode: Mode::Exclusive,
                    token: r.token,
                    holds: r.holds,
                    deadline_ms: r.deadline_ms,
                });
            }
            Read::Many(table) => table.iter().for_each(|slot| f(slot.holder())),
        }
    }

    /// Bytes the value takes (what `MEMORY USAGE` reports for it).
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn allocated_size(self) -> usize {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => lock.allocated_size(),
            Read::Many(table) => table.allocated_size(),
        }
    }

    /// The value's RDB encoding.
    ///
    /// # Safety
    /// As for [`Value::place`].
    pub unsafe fn save(self, sink: &mut impl Sink) {
        // SAFETY: the caller's promise.
        match unsafe { self.read() } {
            Read::One(lock) => codec::encode(&lock.record_in(&mut OwnerBuf::default()), sink),
            Read::Many(table) => codec::encode_table(table, sink),
        }
    }

    /// Marks the value as granted elsewhere: never held under the key it was carried to.
    ///
    /// # Safety
    /// A live value that nothing else reads or writes during the call.
    pub unsafe fn mark_moved(self) {
        match self {
            // SAFETY: the caller's promise.
            Value::Compact(ptr) => unsafe { CompactMut::new(ptr) }.set_place(MOVED),
            // SAFETY: the caller's promise; a boxed table.
            Value::Table(ptr) => unsafe { &mut *ptr.as_ptr().cast::<HolderTable>() }.place = MOVED,
        }
    }

    /// Frees the value.
    ///
    /// # Safety
    /// A value Redis gave back to be freed (or one never handed over), freed once.
    pub unsafe fn free(self) {
        match self {
            // SAFETY: the caller's promise.
            Value::Compact(ptr) => drop(unsafe { OwnedCompact::from_raw(ptr) }),
            // SAFETY: the caller's promise; it came from Box::into_raw.
            Value::Table(ptr) => drop(unsafe { Box::from_raw(ptr.as_ptr().cast::<HolderTable>()) }),
        }
    }
}

/// One of the two forms, as a type: what a data type's callbacks are generic over.
pub trait Form {
    /// The value Redis passes to a callback of this form's type.
    fn value(ptr: NonNull<c_void>) -> Value;

    /// Loads a value of this form from an RDB (or a RESTORE payload), validated within
    /// `bounds`; a reason when it is refused.
    fn load(io: *mut raw::RedisModuleIO, encver: c_int, bounds: Bounds) -> Result<Value, String>;
}

/// One exclusive holder (`dlocklock`).
pub struct Compact;

/// A table of holders (`dlockmany`).
pub struct Table;

impl Form for Compact {
    fn value(ptr: NonNull<c_void>) -> Value {
        Value::Compact(ptr)
    }

    /// A version-1 lock has no deadline of its own: it gets the latest one allowed, and the
    /// key's TTL rules below it.
    fn load(io: *mut raw::RedisModuleIO, encver: c_int, bounds: Bounds) -> Result<Value, String> {
        let decoded = codec::decode(&mut RdbIn(io), encver, bounds)
            .map_err(|why| format!("a lock value (dlocklock): {why}"))?;
        let record = Record {
            owner: decoded.owner.as_ref(),
            token: decoded.token,
            holds: decoded.holds,
            deadline_ms: decoded.deadline_ms.unwrap_or(bounds.latest_deadline_ms),
            place: decoded.place.unwrap_or_else(|| rdb::place_of_io(io)),
        };
        let mut lock = OwnedCompact::new(&record).ok_or("a lock value: no memory")?;
        lock.set_follows_key_ttl(decoded.deadline_ms.is_none());
        NonNull::new(lock.into_raw())
            .map(Value::Compact)
            .ok_or_else(|| "a lock value: no memory".into())
    }
}

impl Form for Table {
    fn value(ptr: NonNull<c_void>) -> Value {
        Value::Table(ptr)
    }

    fn load(io: *mut raw::RedisModuleIO, encver: c_int, bounds: Bounds) -> Result<Value, String> {
        let table = codec::decode_table(&mut RdbIn(io), encver, bounds)
            .map_err(|why| format!("a shared lock or semaphore value (dlockmany): {why}"))?;
        let ptr = Box::into_raw(Box::new(table)).cast::<c_void>();
        // SAFETY: Box::into_raw never returns null.
        Ok(Value::Table(unsafe { NonNull::new_unchecked(ptr) }))
    }
}
