//! Changing a resource's holders, whichever form stores them: the one write interface above the
//! key layer. An [`Edit`] sets, updates, removes and prunes holders; the form follows from the
//! holders alone ([`Edit::finish`]), so a master and its replicas, applying the same changes,
//! store the same form. One exclusive holder is changed in place where it lies (a renewal of a
//! plain lock costs what it did before tables existed); any other change works on a table.

use std::ptr::NonNull;

use dlock_core::Mode;
use redis_module::RedisError;

use super::holder::{Conflict, Lease, Slot};
use super::key::{LockKey, Stored};
use super::table::HolderTable;
use crate::wire::errors;

/// Changes to the resource under an open key, settled by [`Edit::finish`].
pub struct Edit<'k, 'a> {
    key: &'k mut LockKey<'a>,
    /// The kind of the resource: a semaphore's limit, 0 for a lock.
    limit: u32,
    /// What the key holds now, kept by every change made here (so that a renewal reads the
    /// key no more often than it did when only plain locks existed).
    state: State,
    /// Whether anything changed: an edit that changed nothing settles nothing.
    changed: bool,
    /// The stored table once this edit asked for it: it stays where it is until the finish
    /// (nothing but this edit, which borrows the key, can replace or free it).
    table: Option<NonNull<HolderTable>>,
}

/// What the key holds, as far as the holders go.
#[derive(Clone, Copy, PartialEq)]
enum State {
    /// Nothing that counts here: no value, or one moved here from another key.
    Empty,
    /// One exclusive holder with this lease, kept compact (a plain lock).
    Sole(Lease),
    /// A table (of any number of holders until the finish settles it).
    Table,
}

impl<'k, 'a> Edit<'k, 'a> {
    /// Starts changing the resource under `key` (WRONGTYPE for a key of another type), as the
    /// kind it has, or as `limit` when nothing counts there yet. A value moved here from another
    /// key holds nothing: the first change replaces it.
    #[inline(always)]
    pub fn open(key: &'k mut LockKey<'a>, limit: Option<u32>) -> Result<Self, RedisError> {
        let (state, stored_limit) = match key.sole_lease() {
            Some(lease) => (State::Sole(lease), Some(0)),
            None => match key.counted_limit()? {
                Some(stored) => (State::Table, Some(stored)),
                None => (State::Empty, None),
            },
        };
        let limit = stored_limit.or(limit).unwrap_or(0);
        Ok(Edit {
            key,
            limit,
            state,
            changed: false,
            table: None,
        })
    }

    /// The resource as a table, to change (a plain lock becomes a table of its one holder).
    fn table(&mut self) -> Result<&mut HolderTable, RedisError> {
        if let Some(ptr) = self.table {
            // SAFETY: the table stored in the key this edit borrows exclusively; no change
            // replaced it since (every one that could goes through this edit and resets it).
            return Ok(unsafe { &mut *ptr.as_ptr() });
        }
        let ptr = NonNull::from(self.key.table_mut(self.limit)?);
        self.table = Some(ptr);
        self.state = State::Table;
        // SAFETY: as above: the table just stored or found in the borrowed key.
        Ok(unsafe { &mut *ptr.as_ptr() })
    }

    /// The resource's kind: a semaphore's limit, 0 for a lock.
    #[inline]
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The plain lock's lease when `owner` holds it in `mode` (exclusive): the fast path's test.
    #[inline(always)]
    fn sole_of(&self, owner: &[u8], mode: Mode) -> Option<Lease> {
        let State::Sole(lease) = self.state else {
            return None;
        };
        (mode == Mode::Exclusive && self.key.view_owner()? == owner).then_some(lease)
    }

    /// How many holders are stored (ended leases included).
    pub fn len(&self) -> usize {
        match self.state {
            State::Empty => 0,
            State::Sole(_) => 1,
            State::Table => match self.table {
                // SAFETY: as in `table`; only read here.
                Some(table) => unsafe { table.as_ref() }.len(),
                None => self.stored_len(),
            },
        }
    }

    /// How many holders the stored table has, read from the key.
    fn stored_len(&self) -> usize {
        match self.key.stored() {
            Ok(Some(Stored::Table(t))) => t.len(),
            _ => 0,
        }
    }

    /// The stored exclusive holder's owner, whatever its lease.
    pub fn exclusive_owner(&self) -> Option<Box<[u8]>> {
        match self.state {
            State::Empty => None,
            State::Sole(_) => self.key.view_owner().map(Into::into),
            State::Table => match self.key.stored().ok()?? {
                Stored::Table(t) => t.exclusive().map(|x| x.owner.clone()),
                Stored::One(_) => None,
            },
        }
    }

    /// Sets the owner's entry in `slot.mode` (replacing its lease, or joining the others if they
    /// can coexist with it: else nothing changes). Whether it replaced an entry.
    pub fn set(&mut self, slot: Slot) -> Result<bool, SetRefused> {
        let lease = slot.lease;
        if self
            .update(&slot.owner, slot.mode, |l| *l = lease)?
            .is_some()
        {
            return Ok(true);
        }
        match self.state {
            State::Empty if slot.mode == Mode::Exclusive && self.limit == 0 => {
                self.key.put_sole(&slot.owner, lease)?;
                self.state = State::Sole(lease);
                self.changed = true;
                return Ok(false);
            }
            // A plain lock turns into a table only for a holder that can join it.
            State::Sole(_) => self
                .key
                .check_set(&slot, self.limit)?
                .map_err(SetRefused::Conflict)?,
            _ => {}
        }
        let table = self.table()?;
        table.insert(slot).map_err(SetRefused::Conflict)?;
        self.changed = true;
        Ok(false)
    }

    /// Changes the lease of the owner's entry in `mode`; its new lease, or `None` if it has none.
    #[inline(always)]
    pub fn update(
        &mut self,
        owner: &[u8],
        mode: Mode,
        f: impl FnOnce(&mut Lease),
    ) -> Result<Option<Lease>, RedisError> {
        if let Some(mut lease) = self.sole_of(owner, mode) {
            f(&mut lease);
            self.key.set_sole_lease(lease)?;
            self.state = State::Sole(lease);
            self.changed = true;
            return Ok(Some(lease));
        }
        if self.state != State::Table {
            return Ok(None); // nothing here, or a plain lock of someone else
        }
        let table = self.table()?;
        if !table.update(owner, mode, f) {
            return Ok(None);
        }
        let lease = table.get(owner, mode).map(|s| s.lease);
        self.changed = true;
        Ok(lease)
    }

    /// Removes the owner's entry in `mode`; its lease, or `None` if it had none.
    pub fn remove(&mut self, owner: &[u8], mode: Mode) -> Result<Option<Lease>, RedisError> {
        if let Some(lease) = self.sole_of(owner, mode) {
            self.key.delete();
            self.state = State::Empty;
            self.changed = true;
            return Ok(Some(lease));
        }
        if self.state != State::Table {
            return Ok(None);
        }
        let table = self.table()?;
        let gone = table.remove(owner, mode).map(|s| s.lease);
        self.changed |= gone.is_some();
        Ok(gone)
    }

    /// Removes up to `most` holders whose lease ended by `now_ms`, soonest first; returns them.
    #[inline(always)]
    pub fn prune(&mut self, now_ms: u64, most: usize) -> Result<Vec<Slot>, RedisError> {
        match self.state {
            _ if most == 0 => Ok(Vec::new()),
            State::Empty => Ok(Vec::new()),
            State::Sole(lease) if lease.deadline_ms > now_ms => Ok(Vec::new()),
            State::Sole(lease) => {
                let Some(owner) = self.key.view_owner().map(Box::<[u8]>::from) else {
                    return Ok(Vec::new());
                };
                self.key.delete();
                self.state = State::Empty;
                self.changed = true;
                let mode = Mode::Exclusive;
                Ok(vec![Slot { owner, mode, lease }])
            }
            State::Table => {
                let gone = self.table()?.prune(now_ms, most);
                self.changed |= !gone.is_empty();
                Ok(gone)
            }
        }
    }

    /// Settles the form: no holder left, no key; a table of one exclusive holder becomes a plain
    /// lock; the key lives until the last lease ends.
    #[inline(always)]
    pub fn finish(self) -> Result<(), RedisError> {
        if !self.changed {
            return Ok(());
        }
        match self.state {
            State::Sole(lease) => {
                self.key.expire_at(lease.deadline_ms);
                Ok(())
            }
            State::Empty => Ok(()),
            State::Table => self.key.settle(),
        }
    }
}

/// Why [`Edit::set`] changed nothing.
pub enum SetRefused {
    /// The holder cannot coexist with the stored ones.
    Conflict(Conflict),
    Error(RedisError),
}

impl From<RedisError> for SetRefused {
    fn from(error: RedisError) -> Self {
        SetRefused::Error(error)
    }
}

impl From<SetRefused> for RedisError {
    fn from(refused: SetRefused) -> Self {
        match refused {
            SetRefused::Conflict(why) => errors::holders_conflict(&why.to_string()),
            SetRefused::Error(error) => error,
        }
    }
}
