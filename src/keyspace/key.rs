//! An open key that holds, or is about to hold, a resource: reads its holders (refusing keys of
//! other types) whichever form stores them, and keeps the key's TTL at the last lease's end.
//! Above the key layer a resource is its [`View`] and holders ([`super::holder`]); the form is
//! this file's and [`super::edit`]'s business. A resource of one exclusive holder is kept
//! compact, any other in a table: the form follows from the holders alone (see
//! [`LockKey::settle`]), so a master and its replicas, applying the same changes, store the
//! same form.

use std::cell::OnceCell;
use std::os::raw::c_int;
use std::ptr::NonNull;

use dlock_core::{Holder, Mode};
use redis_module::{raw, Context, RedisError};

use super::compact::{CompactMut, CompactRef, OwnedCompact, Record};
use super::form::Value;
use super::holder::{Conflict, Lease, Slot};
use super::owner::OwnerBuf;
use super::places::place;
use super::table::HolderTable;
use super::values;
use super::view::View;
use crate::server;
use crate::wire::{errors, Arg};

/// A value found in a key, whatever its state.
pub(super) enum Stored<'a> {
    One(CompactRef<'a>),
    Table(&'a HolderTable),
}

/// An open key, closed on drop.
pub struct LockKey<'a> {
    ctx: &'a Context,
    name: &'a Arg,
    key: Option<NonNull<raw::RedisModuleKey>>,
    place: u64,
    /// A compact value's owner, unpacked on first read (see [`super::owner`]); emptied by every
    /// write, which needs `&mut self` and so outlives no borrow of it.
    owner: OnceCell<OwnerBuf>,
}

impl<'a> LockKey<'a> {
    pub fn open(ctx: &'a Context, name: &'a Arg, write: bool) -> LockKey<'a> {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let key = crate::api!(RedisModule_OpenKey).and_then(|open| {
            // SAFETY: ctx is the live context of the running command and the name a live
            // argument of it; the key is closed in Drop before either goes away.
            NonNull::new(unsafe { open(ctx.ctx, name.as_ptr(), mode as c_int) })
        });
        LockKey {
            ctx,
            name,
            key,
            place: place(server::selected_db(ctx), name.as_bytes()),
            owner: OnceCell::new(),
        }
    }

    pub fn name(&self) -> &'a Arg {
        self.name
    }

    /// The value stored here, whatever its state; `None` if the key is empty, WRONGTYPE if it
    /// holds another type.
    pub(super) fn stored(&self) -> Result<Option<Stored<'_>>, RedisError> {
        let Some(key) = self.key else {
            return Ok(None);
        };
        Ok(values::value_of(key)?.map(|value| match value {
            // SAFETY: a value of our type in an open key stays put until the key is written,
            // which needs `&mut self` and so ends this borrow first.
            Value::Compact(ptr) => Stored::One(unsafe { CompactRef::new(ptr) }),
            // SAFETY: as above; a dlockmany value is a boxed table (never null here).
            Value::Table(ptr) => Stored::Table(unsafe { &*ptr.as_ptr().cast::<HolderTable>() }),
        }))
    }

    /// The resource's live holders at `now_ms`. A value granted under another key (moved here)
    /// holds nothing.
    pub fn view(&self, now_ms: u64) -> Result<View<'_>, RedisError> {
        Ok(match self.stored()? {
            Some(Stored::One(lock)) if lock.place() == self.place => {
                let holder = self.sole_holder(lock);
                match holder.is_live(now_ms) {
                    true => View::One(holder),
                    false => View::Free,
                }
            }
            Some(Stored::Table(table)) if table.place == self.place => {
                View::Table(table.view(now_ms))
            }
            _ => View::Free,
        })
    }

    /// A compact value's holder, its owner unpacked once per write.
    fn sole_holder(&self, lock: CompactRef<'_>) -> Holder<'_> {
        let owner = self.owner.get_or_init(|| {
            let mut owner = OwnerBuf::default();
            lock.owner_into(&mut owner);
            owner
        });
        Holder {
            owner: owner.as_slice(),
            mode: Mode::Exclusive,
            token: lock.token(),
            holds: lock.holds(),
            deadline_ms: self.deadline_of(lock),
        }
    }

    /// A compact value's deadline: its own, or the key's TTL below it while it follows that.
    fn deadline_of(&self, lock: CompactRef<'_>) -> u64 {
        let own = lock.deadline_ms();
        match lock.follows_key_ttl() {
            true => self.abs_expire_ms().map_or(own, |ttl| ttl.min(own)),
            false => own,
        }
    }

    /// Whether the key holds no resource value at all (not even an ended or a moved one).
    pub fn is_empty(&self) -> Result<bool, RedisError> {
        Ok(self.stored()?.is_none())
    }

    /// The newest token stored under the key, whatever its state (what the node counter must
    /// have reached before a grant here).
    pub fn newest_token(&self) -> Option<u64> {
        match self.stored().ok()?? {
            Stored::One(lock) => Some(lock.token()),
            Stored::Table(table) => Some(table.newest_token()),
        }
    }

    /// The kind of the resource held here — a semaphore's limit, 0 for a lock — whatever its
    /// leases; `None` when nothing counts here (an empty key, a value moved here).
    pub fn counted_limit(&self) -> Result<Option<u32>, RedisError> {
        Ok(match self.stored()? {
            Some(Stored::One(lock)) if lock.place() == self.place => Some(0),
            Some(Stored::Table(t)) if t.place == self.place => Some(t.limit()),
            _ => None,
        })
    }

    /// A plain lock stored here (not moved): its lease, the deadline as [`LockKey::view`]
    /// judges it, whatever its state.
    #[inline]
    pub(super) fn sole_lease(&self) -> Option<Lease> {
        match self.stored().ok()?? {
            Stored::One(lock) if lock.place() == self.place => Some(Lease {
                token: lock.token(),
                holds: lock.holds(),
                deadline_ms: self.deadline_of(lock),
            }),
            _ => None,
        }
    }

    /// A plain lock stored here (not moved): its owner.
    #[inline]
    pub(super) fn view_owner(&self) -> Option<&[u8]> {
        if let Some(owner) = self.owner.get() {
            // Unpacked from the plain lock here by a read since the last write (every write that
            // could change it empties it): no need to look at the key again.
            return Some(owner.as_slice());
        }
        match self.stored().ok()?? {
            Stored::One(lock) if lock.place() == self.place => Some(self.sole_holder(lock).owner),
            _ => None,
        }
    }

    /// The resource becomes one exclusive holder (replacing whatever the key held), the key's
    /// TTL at its lease's end.
    pub fn put_sole(&mut self, owner: &[u8], lease: Lease) -> Result<(), RedisError> {
        self.put(&Record {
            owner,
            token: lease.token,
            holds: lease.holds,
            deadline_ms: lease.deadline_ms,
            place: self.place,
        })
    }

    /// The sole holder just put takes the key's TTL, when earlier, as its lease's end (an AOF's
    /// `DLOCK.APPLY` without `PXAT`, until the key's TTL is known: [`super::ttl`]).
    pub fn follow_key_ttl(&mut self) {
        if let Some(mut lock) = self.compact_mut() {
            lock.set_follows_key_ttl(true);
        }
    }

    /// Stores a plain lock (replacing whatever the key held), the key's TTL at its deadline.
    fn put(&mut self, record: &Record<'_>) -> Result<(), RedisError> {
        let lock = OwnedCompact::new(record).ok_or_else(errors::cannot_store)?;
        self.owner.take();
        let key = self.key.ok_or_else(errors::cannot_store)?;
        values::set_compact(key, lock)?;
        self.expire_at(record.deadline_ms);
        Ok(())
    }

    /// Changes the stored plain lock's lease in place (its owner stays, and so does the owner
    /// unpacked from it).
    #[inline]
    pub(super) fn set_sole_lease(&mut self, lease: Lease) -> Result<(), RedisError> {
        let key = self.key.ok_or_else(errors::cannot_store)?;
        let Some(Value::Compact(value)) = values::value_of(key)? else {
            return Err(errors::cannot_store());
        };
        // SAFETY: `&mut self` is the only way to the value while this borrow lasts.
        let mut lock = unsafe { values::compact_mut(value) };
        lock.set_token(lease.token);
        lock.set_holds(lease.holds);
        lock.set_deadline(lease.deadline_ms);
        lock.set_follows_key_ttl(false);
        Ok(())
    }

    /// The stored plain lock, to change in place.
    fn compact_mut(&mut self) -> Option<CompactMut<'_>> {
        let Value::Compact(value) = values::value_of(self.key?).ok()?? else {
            return None;
        };
        self.owner.take();
        // SAFETY: `&mut self` is the only way to the value while this borrow lasts.
        Some(unsafe { values::compact_mut(value) })
    }

    /// Whether `slot` may be set in the resource here, as a semaphore of `limit` or a lock
    /// (replacing the owner's entry in its mode, or joining the others): checked before anything
    /// changes. A plain lock's one holder is copied for the check.
    pub fn check_set(&self, slot: &Slot, limit: u32) -> Result<Result<(), Conflict>, RedisError> {
        let check = |t: &HolderTable| t.check_upsert(&slot.owner, slot.mode, limit);
        Ok(match self.stored()? {
            Some(Stored::Table(t)) if t.place == self.place => check(t),
            Some(Stored::One(lock)) if lock.place() == self.place => {
                check(&HolderTable::of_one(self.sole_slot(lock), self.place))
            }
            _ => check(&HolderTable::new(limit, self.place)),
        })
    }

    /// A plain lock's holder, owned.
    fn sole_slot(&self, lock: CompactRef<'_>) -> Slot {
        let h = self.sole_holder(lock);
        let lease = Lease {
            token: h.token,
            holds: h.holds,
            deadline_ms: h.deadline_ms,
        };
        Slot {
            owner: h.owner.into(),
            mode: Mode::Exclusive,
            lease,
        }
    }

    /// The resource as a table, to change: the stored one; a plain lock turned into a table of
    /// its one holder; or a new empty table of `limit` (nothing stored, or a moved value).
    /// [`LockKey::settle`] must follow the changes.
    pub(super) fn table_mut(&mut self, limit: u32) -> Result<&mut HolderTable, RedisError> {
        let key = self.key.ok_or_else(errors::cannot_store)?;
        let fresh = match self.stored()? {
            Some(Stored::Table(t)) if t.place == self.place => None,
            Some(Stored::One(lock)) if lock.place() == self.place => {
                Some(HolderTable::of_one(self.sole_slot(lock), self.place))
            }
            _ => Some(HolderTable::new(limit, self.place)),
        };
        self.owner.take();
        if let Some(table) = fresh {
            values::set_table(key, table)?;
        }
        match values::value_of(key)? {
            // SAFETY: `&mut self` is the only way to the value while this borrow lasts.
            Some(Value::Table(value)) => Ok(unsafe { values::table_mut(value) }),
            _ => Err(errors::cannot_store()),
        }
    }

    /// After a table changed: an empty one goes (the key is deleted), one of a single exclusive
    /// holder becomes a plain lock, any other keeps its key until its last lease ends.
    pub(super) fn settle(&mut self) -> Result<(), RedisError> {
        let Some(Stored::Table(table)) = self.stored()? else {
            return Ok(());
        };
        let last = table.last_deadline();
        let sole = match (table.limit(), table.exclusive()) {
            (0, Some(x)) if table.len() == 1 => Some(x.clone()),
            _ => None,
        };
        match (last, sole) {
            (None, _) => self.delete(),
            (Some(_), Some(x)) => self.put(&Record {
                owner: &x.owner,
                token: x.lease.token,
                holds: x.lease.holds,
                deadline_ms: x.lease.deadline_ms,
                place: self.place,
            })?,
            (Some(last), None) => self.expire_at(last),
        }
        Ok(())
    }

    pub fn delete(&mut self) {
        self.owner.take();
        if let (Some(key), Some(delete)) = (self.key, crate::api!(RedisModule_DeleteKey)) {
            // SAFETY: an open key of this command.
            super::unlink::own_write(|| unsafe { delete(key.as_ptr()) });
        }
    }

    /// Tells Redis the key changed: invalidates WATCH (the module opts out of the implicit
    /// signal, so that a refused ACQUIRE leaves a WATCH intact) and sends the keyspace event.
    pub fn changed(&self, event: &std::ffi::CStr) {
        super::notify::changed(self.ctx, self.name, event);
    }

    /// Sets the key's TTL (a plain lock's new deadline, after a change in place).
    pub(super) fn expire_at(&mut self, unix_ms: u64) {
        let at = i64::try_from(unix_ms).unwrap_or(i64::MAX);
        if let (Some(key), Some(set)) = (self.key, crate::api!(RedisModule_SetAbsExpire)) {
            // SAFETY: an open key of this command.
            unsafe { set(key.as_ptr(), at) };
        }
    }

    fn abs_expire_ms(&self) -> Option<u64> {
        let get = crate::api!(RedisModule_GetAbsExpire)?;
        // SAFETY: an open key of this command.
        let at = unsafe { get(self.key?.as_ptr()) };
        u64::try_from(at).ok()
    }
}

impl Drop for LockKey<'_> {
    fn drop(&mut self) {
        if let (Some(key), Some(close)) = (self.key, crate::api!(RedisModule_CloseKey)) {
            // SAFETY: opened by `open` and closed only here.
            unsafe { close(key.as_ptr()) };
        }
    }
}
