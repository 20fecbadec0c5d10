//! An open key that holds, or is about to hold, a lock: reads it (refusing keys of other types),
//! stores and changes it, and keeps the key's TTL in step with the lock's deadline.

use std::cell::OnceCell;
use std::os::raw::c_int;
use std::ptr::NonNull;

use dlock_core::Held;
use redis_module::{raw, Context, RedisError};

use super::group::Group;
use super::group_type::set_group;
use super::owner::OwnerBuf;
use super::persistence::{self, Value};
use super::value::{LockMut, LockRef, OwnedLock, Record};
use super::{place, FOLLOW_KEY_TTL};
use crate::wire::{errors, Arg};
use dlock_core::group::Mode;

/// A value found in a key.
pub enum Stored<'a> {
    Lock(LockRef<'a>),
    Group(&'a Group),
}

/// An open key, closed on drop.
pub struct LockKey<'a> {
    ctx: &'a Context,
    name: &'a Arg,
    key: Option<NonNull<raw::RedisModuleKey>>,
    place: u64,
    /// The stored lock's owner, unpacked on first read (see [`super::owner`]); emptied by every
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
            place: place(selected_db(ctx), name.as_bytes()),
            owner: OnceCell::new(),
        }
    }

    pub fn name(&self) -> &'a Arg {
        self.name
    }

    /// Where a lock stored under this key now must have been granted to count (see
    /// [`super::place`]).
    pub fn place(&self) -> u64 {
        self.place
    }

    /// The value stored here, whatever its state; `None` if the key is empty, WRONGTYPE if it
    /// holds another type.
    pub fn stored(&self) -> Result<Option<Stored<'_>>, RedisError> {
        let Some(key) = self.key else {
            return Ok(None);
        };
        Ok(persistence::value_of(key)?.map(|value| match value {
            // SAFETY: a value of our type in an open key stays put until the key is written,
            // which needs `&mut self` and so ends this borrow first.
            Value::Lock(ptr) => Stored::Lock(unsafe { LockRef::new(ptr) }),
            // SAFETY: as above; a dlockmany value is a boxed Group (never null here).
            Value::Group(ptr) => Stored::Group(unsafe { &*ptr.as_ptr().cast::<Group>() }),
        }))
    }

    /// True if the key holds a shared lock or a semaphore (several holders): the commands then
    /// take the group path.
    pub fn is_group(&self) -> Result<bool, RedisError> {
        Ok(matches!(self.stored()?, Some(Stored::Group(_))))
    }

    /// The holders stored here as a group, every lease included (ended ones too: a write drops
    /// them and replicates that, so replicas never judge leases by their own clock): a plain lock
    /// is one exclusive holder; a value granted under another key (moved) holds nothing.
    pub fn group_view(&self) -> Result<Group, RedisError> {
        let mut view = Group {
            place: self.place,
            ..Group::default()
        };
        match self.stored()? {
            Some(Stored::Group(group)) if group.place == self.place => view = group.clone(),
            Some(Stored::Lock(lock)) if lock.place() == self.place => {
                let mut owner = OwnerBuf::default();
                let record = lock.record_in(&mut owner);
                let deadline_ms = match record.deadline_ms {
                    FOLLOW_KEY_TTL => self.abs_expire_ms().unwrap_or(u64::MAX),
                    deadline => deadline,
                };
                view.holders.push(super::group::Holder {
                    owner: record.owner.into(),
                    mode: Mode::Exclusive,
                    token: record.token,
                    holds: record.holds,
                    deadline_ms,
                });
            }
            _ => {}
        }
        Ok(view)
    }

    /// Stores `group` as the resource's new state: nothing (the key is deleted), a plain lock
    /// (one exclusive holder: the compact form), or a group; the key expires with its last lease.
    pub fn store_group(&mut self, group: Group) -> Result<(), RedisError> {
        let single_writer = group.limit == 0
            && group.holders.len() == 1
            && group.holders[0].mode == Mode::Exclusive;
        self.owner.take();
        if group.holders.is_empty() {
            self.delete();
            return Ok(());
        }
        if single_writer {
            let h = &group.holders[0];
            return self.put(&h.owner, h.token, h.holds, h.deadline_ms);
        }
        let last = group.last_deadline();
        let key = self.key.ok_or_else(errors::cannot_store)?;
        set_group(key, group)?;
        if let Some(deadline_ms) = last {
            self.expire_at(deadline_ms);
        }
        Ok(())
    }

    /// The lock held here at `now_ms`: stored, granted under this very key, and before its
    /// deadline. Anything else is a free lock. A group's holders are not one lock: `None`
    /// (the commands route groups to their own path first).
    pub fn held(&self, now_ms: u64) -> Result<Option<Held<'_>>, RedisError> {
        Ok(self.held_or_group(now_ms)?.flatten())
    }

    /// As [`LockKey::held`], reading the key's value once: `None` when the key holds a group
    /// (several holders), which takes the group path, else the held lock if any.
    pub fn held_or_group(&self, now_ms: u64) -> Result<Option<Option<Held<'_>>>, RedisError> {
        let value = match self.stored()? {
            Some(Stored::Group(_)) => return Ok(None),
            Some(Stored::Lock(value)) => value,
            None => return Ok(Some(None)),
        };
        if value.place() != self.place {
            return Ok(Some(None)); // moved here by RENAME, MOVE, SWAPDB or RESTORE: never held
        }
        let deadline_ms = match value.deadline_ms() {
            FOLLOW_KEY_TTL => self.abs_expire_ms().unwrap_or(u64::MAX),
            deadline => deadline,
        };
        let owner = self.owner.get_or_init(|| {
            let mut owner = OwnerBuf::default();
            value.owner_into(&mut owner);
            owner
        });
        let held = Held {
            owner: owner.as_slice(),
            token: value.token(),
            holds: value.holds(),
            deadline_ms,
        };
        Ok(Some(dlock_core::lock::live(Some(held), now_ms)))
    }

    /// Stores a new lock (replacing whatever the key held) with its TTL at the deadline (none
    /// for [`FOLLOW_KEY_TTL`]: the caller sets the key's TTL).
    pub fn put(
        &mut self,
        owner: &[u8],
        token: u64,
        holds: u16,
        deadline_ms: u64,
    ) -> Result<(), RedisError> {
        let record = Record {
            owner,
            token,
            holds,
            deadline_ms,
            place: self.place,
        };
        let lock = OwnedLock::new(&record).ok_or_else(errors::cannot_store)?;
        self.owner.take();
        let key = self.key.ok_or_else(errors::cannot_store)?;
        persistence::set_value(key, lock)?;
        if deadline_ms != FOLLOW_KEY_TTL {
            self.expire_at(deadline_ms);
        }
        Ok(())
    }

    /// The stored value, to change in place.
    pub fn value_mut(&mut self) -> Option<LockMut<'_>> {
        let Value::Lock(value) = persistence::value_of(self.key?).ok()?? else {
            return None;
        };
        // SAFETY: `&mut self` is the only way to the value while this borrow lasts.
        Some(unsafe { LockMut::new(value) })
    }

    /// Sets a new deadline on the stored lock and the key's TTL with it.
    pub fn set_deadline(&mut self, deadline_ms: u64) {
        if let Some(mut value) = self.value_mut() {
            value.set_deadline(deadline_ms);
        }
        self.expire_at(deadline_ms);
    }

    pub fn delete(&mut self) {
        self.owner.take();
        if let (Some(key), Some(delete)) = (self.key, crate::api!(RedisModule_DeleteKey)) {
            // SAFETY: an open key of this command.
            unsafe { delete(key.as_ptr()) };
        }
    }

    /// Tells Redis the key changed: invalidates WATCH (the module opts out of the implicit
    /// signal, so that a refused ACQUIRE leaves a WATCH intact) and sends the keyspace event.
    pub fn changed(&self, event: &std::ffi::CStr) {
        super::notify::changed(self.ctx, self.name, event);
    }

    fn expire_at(&mut self, unix_ms: u64) {
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

/// The database the command's client has selected.
pub fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: the context of a running command or callback.
    crate::api!(RedisModule_GetSelectedDb).map_or(0, |get| unsafe { get(ctx.ctx) })
}
