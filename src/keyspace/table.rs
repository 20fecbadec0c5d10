//! A resource with several holders as it lives in Redis memory (the `dlockmany` data type): the
//! holders in a dense vector, indexed by owner and mode (a hash table of positions) and by lease
//! end (an ordered map), so that every question the rules ask and every change a command makes
//! costs O(log n) whatever the resource holds. The module's allocator is Redis's, so
//! `used_memory` sees the holders as it sees a plain lock.
//!
//! The stored holders always coexist, whatever their leases (one exclusive entry beside nothing
//! but its owner's shared side; permits only, at most `limit`, in a semaphore): [`HolderTable::
//! insert`] refuses anything else, so a crafted RESTORE, RDB or `DLOCK.APPLY` cannot put the
//! resource in a state the rules never reason about, and the check costs O(1).

use std::collections::BTreeSet;
use std::hash::{BuildHasher, RandomState};

use dlock_core::{Holder, Holders, Mine, Mode};
use hashbrown::HashTable;

use super::holder::{Conflict, Lease, Slot};

/// Where a holder is in lease-end order: deadline, then token and mode, then its position
/// (tokens need not be unique: two owners may FENCE to the same quorum token).
type DeadlineKey = (u64, u64, Mode, u32);

/// The holders of one resource.
#[derive(Debug, Clone, Default)]
pub struct HolderTable {
    /// A semaphore's limit; 0 for a read/write lock. Set while the table is empty.
    limit: u32,
    /// Where the resource was granted ([`super::places::place`]); [`super::places::MOVED`] once moved.
    pub place: u64,
    slots: Vec<Slot>,
    /// Each slot's owner hash, at the same position: a removal or a move finds its index entry
    /// without hashing a 256-byte owner again.
    hashes: Vec<u64>,
    /// Positions by owner hash (an owner's entries, one per mode, share it).
    by_owner: HashTable<u32>,
    by_deadline: BTreeSet<DeadlineKey>,
    hasher: RandomState,
    /// The position of the exclusive entry, if any.
    exclusive: Option<u32>,
    /// The largest token ever stored (what the node counter rises to on a RESTORE).
    newest: u64,
}

impl HolderTable {
    /// An empty table for a read/write lock (`limit` 0) or a semaphore.
    pub fn new(limit: u32, place: u64) -> HolderTable {
        HolderTable {
            limit,
            place,
            ..HolderTable::default()
        }
    }

    /// A read/write lock's table of its one (exclusive) holder.
    pub fn of_one(slot: Slot, place: u64) -> HolderTable {
        let mut table = HolderTable::new(0, place);
        let hash = table.hash(&slot.owner);
        table.by_owner.insert_unique(hash, 0, |_| hash);
        table.hashes.push(hash);
        table.by_deadline.insert(deadline_key(&slot, 0));
        table.exclusive = (slot.mode == Mode::Exclusive).then_some(0);
        table.newest = slot.lease.token;
        table.slots.push(slot);
        table
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Stored holders, ended leases included.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn newest_token(&self) -> u64 {
        self.newest
    }

    /// Every stored holder, in no particular order (RDB, AOF, digest, free).
    pub fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter()
    }

    /// The soonest lease end after `now_ms`: when a place may free up next.
    pub fn next_deadline(&self, now_ms: u64) -> Option<u64> {
        let live = (now_ms.saturating_add(1), 0, Mode::Exclusive, 0)..;
        self.by_deadline.range(live).next().map(|k| k.0)
    }

    /// The latest lease end: the key lives until then.
    pub fn last_deadline(&self) -> Option<u64> {
        self.by_deadline.last().map(|k| k.0)
    }

    /// How many stored leases have ended by `now_ms` (a walk of the ended ones only, which
    /// writes keep few by pruning).
    pub fn ended(&self, now_ms: u64) -> usize {
        let ended = ..=(now_ms, u64::MAX, Mode::Permit, u32::MAX);
        self.by_deadline.range(ended).count()
    }

    /// The owner's stored entry in `mode`, whatever its lease.
    pub fn get(&self, owner: &[u8], mode: Mode) -> Option<&Slot> {
        self.position(owner, mode).map(|i| &self.slots[i])
    }

    /// The stored exclusive entry, whatever its lease.
    pub fn exclusive(&self) -> Option<&Slot> {
        self.exclusive.map(|i| &self.slots[i as usize])
    }

    fn hash(&self, owner: &[u8]) -> u64 {
        self.hasher.hash_one(owner)
    }

    fn position(&self, owner: &[u8], mode: Mode) -> Option<usize> {
        let slots = &self.slots;
        let same = |&i: &u32| {
            let s = &slots[i as usize];
            s.mode == mode && *s.owner == *owner
        };
        let found = self.by_owner.find(self.hash(owner), same);
        found.map(|&i| i as usize)
    }

    /// Every stored entry of `owner` (one hash of it, whatever the table holds).
    pub fn of_owner<'s, 'o>(
        &'s self,
        owner: &'o [u8],
    ) -> impl Iterator<Item = &'s Slot> + use<'s, 'o> {
        let slots = &self.slots;
        let found = self.by_owner.iter_hash(self.hash(owner));
        found
            .map(move |&i| &slots[i as usize])
            .filter(move |s| *s.owner == *owner)
    }

    /// Whether `slot` may join the stored holders (see the module docs).
    pub fn check(&self, owner: &[u8], mode: Mode) -> Result<(), Conflict> {
        if self.get(owner, mode).is_some() {
            return Err(Conflict::Duplicate);
        }
        let permit = mode == Mode::Permit;
        if permit != (self.limit > 0) {
            return Err(Conflict::WrongKind);
        }
        if permit && self.slots.len() >= self.limit as usize {
            return Err(Conflict::Full);
        }
        // Beside an exclusive entry, only its owner's shared side; an exclusive entry joins
        // nothing but that (an owner has one entry per mode, so one slot at most).
        let others = match (self.exclusive(), self.slots.as_slice()) {
            (Some(x), _) => *x.owner != *owner,
            (None, []) => false,
            (None, [only]) => mode == Mode::Exclusive && *only.owner != *owner,
            (None, _) => mode == Mode::Exclusive,
        };
        if others {
            return Err(Conflict::Exclusive);
        }
        Ok(())
    }

    /// Whether the owner's entry in `mode` may be set in a table of `limit`: replacing it, or
    /// joining the others (an empty table takes any limit).
    pub fn check_upsert(&self, owner: &[u8], mode: Mode, limit: u32) -> Result<(), Conflict> {
        if self.is_empty() {
            return HolderTable::new(limit, self.place).check(owner, mode);
        }
        if self.limit != limit {
            return Err(Conflict::WrongKind);
        }
        match self.get(owner, mode) {
            Some(_) => Ok(()),
            None => self.check(owner, mode),
        }
    }

    /// Adds a holder that [`HolderTable::check`] accepts.
    pub fn insert(&mut self, slot: Slot) -> Result<(), Conflict> {
        self.check(&slot.owner, slot.mode)?;
        let at = u32::try_from(self.slots.len()).map_err(|_| Conflict::Full)?;
        let hash = self.hash(&slot.owner);
        let hashes = &self.hashes;
        self.by_owner.insert_unique(hash, at, |&i| {
            hashes.get(i as usize).copied().unwrap_or(hash)
        });
        self.hashes.push(hash);
        self.by_deadline.insert(deadline_key(&slot, at));
        if slot.mode == Mode::Exclusive {
            self.exclusive = Some(at);
        }
        self.newest = self.newest.max(slot.lease.token);
        self.slots.push(slot);
        Ok(())
    }

    /// Changes the lease of the owner's entry in `mode` in place; false if it has none.
    pub fn update(&mut self, owner: &[u8], mode: Mode, change: impl FnOnce(&mut Lease)) -> bool {
        let Some(i) = self.position(owner, mode) else {
            return false;
        };
        let before = deadline_key(&self.slots[i], i as u32);
        change(&mut self.slots[i].lease);
        let after = deadline_key(&self.slots[i], i as u32);
        if after != before {
            self.by_deadline.remove(&before);
            self.by_deadline.insert(after);
        }
        self.newest = self.newest.max(self.slots[i].lease.token);
        true
    }

    /// Removes the owner's entry in `mode`.
    pub fn remove(&mut self, owner: &[u8], mode: Mode) -> Option<Slot> {
        let i = self.position(owner, mode)?;
        Some(self.remove_at(i))
    }

    /// Removes the holder at position `i`: the last holder moves into its place, and the
    /// indexes follow it.
    fn remove_at(&mut self, i: usize) -> Slot {
        let hash = self.hashes[i];
        if let Ok(entry) = self.by_owner.find_entry(hash, |&p| p as usize == i) {
            entry.remove();
        }
        self.by_deadline
            .remove(&deadline_key(&self.slots[i], i as u32));
        if self.exclusive == Some(i as u32) {
            self.exclusive = None;
        }
        self.hashes.swap_remove(i);
        let gone = self.slots.swap_remove(i);
        if i < self.slots.len() {
            self.renumber(self.slots.len(), i);
        }
        gone
    }

    /// The holder that was at position `from` is now at `to`.
    fn renumber(&mut self, from: usize, to: usize) {
        let moved = &self.slots[to];
        let hash = self.hashes[to];
        if let Some(p) = self.by_owner.find_mut(hash, |&p| p as usize == from) {
            *p = to as u32;
        }
        self.by_deadline.remove(&deadline_key(moved, from as u32));
        self.by_deadline.insert(deadline_key(moved, to as u32));
        if self.exclusive == Some(from as u32) {
            self.exclusive = Some(to as u32);
        }
    }

    /// Removes up to `most` holders whose lease ended by `now_ms`, soonest first; returns them.
    pub fn prune(&mut self, now_ms: u64, most: usize) -> Vec<Slot> {
        let mut gone = Vec::new();
        while gone.len() < most {
            let Some(&(deadline_ms, .., i)) = self.by_deadline.first() else {
                break;
            };
            if deadline_ms > now_ms {
                break;
            }
            gone.push(self.remove_at(i as usize));
        }
        gone
    }

    /// Bytes this value takes (what `MEMORY USAGE` reports for it): the table, its indexes and
    /// the owners.
    pub fn allocated_size(&self) -> usize {
        let owners: usize = self.slots.iter().map(|s| s.owner.len()).sum();
        let per_slot = std::mem::size_of::<Slot>()
            + std::mem::size_of::<u64>() // its hash
            + std::mem::size_of::<u32>() + 1 // the hash table's position and control byte
            + std::mem::size_of::<DeadlineKey>() * 3 / 2; // B-tree nodes are ~2/3 full
        std::mem::size_of::<HolderTable>() + self.slots.capacity() * per_slot + owners
    }

    /// The live holders at `now_ms`, as the rules see them.
    pub fn view(&self, now_ms: u64) -> TableView<'_> {
        TableView {
            table: self,
            now_ms,
        }
    }
}

fn deadline_key(slot: &Slot, at: u32) -> DeadlineKey {
    (slot.lease.deadline_ms, slot.lease.token, slot.mode, at)
}

/// A table's live holders at one moment.
#[derive(Clone, Copy)]
pub struct TableView<'a> {
    table: &'a HolderTable,
    now_ms: u64,
}

impl TableView<'_> {
    pub fn next_deadline(&self) -> Option<u64> {
        self.table.next_deadline(self.now_ms)
    }

    /// The live holders, soonest lease end first.
    pub fn live(&self) -> impl Iterator<Item = Holder<'_>> {
        let now_ms = self.now_ms;
        let live = (now_ms.saturating_add(1), 0, Mode::Exclusive, 0)..;
        let slots = &self.table.slots;
        self.table
            .by_deadline
            .range(live)
            .map(move |k| slots[k.3 as usize].holder())
    }
}

impl Holders for TableView<'_> {
    fn count(&self) -> usize {
        self.table.len() - self.table.ended(self.now_ms)
    }

    fn limit(&self) -> u32 {
        self.table.limit
    }

    fn mine(&self, owner: &[u8]) -> Mine<'_> {
        let mut mine = Mine::default();
        for slot in self.table.of_owner(owner) {
            let h = slot.holder();
            if h.is_live(self.now_ms) {
                mine.add(h);
            }
        }
        mine
    }

    fn exclusive(&self) -> Option<Holder<'_>> {
        let slot = self.table.exclusive()?;
        Some(slot.holder()).filter(|h| h.is_live(self.now_ms))
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
