//! Fair waiting: a per-resource queue of waiters in service order.
//!
//! Waiters are served by rank, ties by arrival. A ticketed waiter's rank is its ticket; an
//! un-ticketed one's is its arrival time in microseconds (so FIFO among themselves). Who is
//! served, and when a ticket wounds a tentative grant, is [`crate::rules`]'.

use std::collections::BTreeMap;

use crate::holders::Want;

/// One queued request. `handle` is whatever the caller needs to answer it later (a blocked
/// client in the module, a client id in the model).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Waiter<W> {
    pub owner: Vec<u8>,
    /// Served smallest first: the ticket, or the arrival time for an un-ticketed waiter.
    pub rank: u64,
    pub ticketed: bool,
    /// Arrival order on this queue (ties between equal ranks).
    pub seq: u64,
    pub ttl_ms: u64,
    /// What it waits for: the exclusive lock, a shared hold or a permit.
    pub want: Want,
    pub handle: W,
}

/// The waiters of one key, kept in service order. Every operation a handoff, a parking or a
/// withdrawal makes is logarithmic in the queue's length: with 10,000 waiters on one key a
/// vector's shifts and owner scans cost ~30 µs of the event loop per handoff.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Queue<W> {
    /// By place: rank, then arrival.
    waiters: BTreeMap<Place, Waiter<W>>,
    /// Each queued owner's place (an owner waits once).
    places: BTreeMap<Vec<u8>, Place>,
    next_seq: u64,
}

/// A waiter's place in service order: its rank, ties broken by arrival.
pub type Place = (u64, u64);

impl<W> Default for Queue<W> {
    fn default() -> Self {
        Queue::new()
    }
}

impl<W> Queue<W> {
    pub const fn new() -> Queue<W> {
        Queue {
            waiters: BTreeMap::new(),
            places: BTreeMap::new(),
            next_seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// In service order.
    pub fn iter(&self) -> impl Iterator<Item = &Waiter<W>> {
        self.waiters.values()
    }

    /// True if a waiter is ranked ahead of a newcomer of rank `rank`.
    pub fn has_ahead(&self, rank: u64) -> bool {
        self.head().is_some_and(|w| w.rank <= rank)
    }

    /// True if `owner` has a request queued.
    pub fn contains_owner(&self, owner: &[u8]) -> bool {
        self.places.contains_key(owner)
    }

    /// Queues a request; a queued request of the same owner is replaced (a client asking again
    /// keeps one place) and returned, so its old handle can be answered.
    pub fn push(
        &mut self,
        owner: &[u8],
        rank: u64,
        ticketed: bool,
        (ttl_ms, want): (u64, Want),
        handle: W,
    ) -> Option<Waiter<W>> {
        let seq = self.next_seq;
        self.push_at(owner, (rank, seq), ticketed, (ttl_ms, want), handle)
    }

    /// As [`Queue::push`], with the arrival number given: a node numbers arrivals once for all
    /// its queues, so that every queue follows one node-wide order and a set request waiting in
    /// several queues is placed alike in each (crate::sets: no cycle of queue heads).
    pub fn push_at(
        &mut self,
        owner: &[u8],
        (rank, seq): Place,
        ticketed: bool,
        (ttl_ms, want): (u64, Want),
        handle: W,
    ) -> Option<Waiter<W>> {
        let replaced = self.remove_owner(owner);
        self.next_seq = self.next_seq.max(seq.saturating_add(1));
        let waiter = Waiter {
            owner: owner.to_vec(),
            rank,
            ticketed,
            seq,
            ttl_ms,
            want,
            handle,
        };
        self.places.insert(owner.to_vec(), (rank, seq));
        self.waiters.insert((rank, seq), waiter);
        replaced
    }

    /// `owner`'s place, if it waits here.
    pub fn place_of(&self, owner: &[u8]) -> Option<Place> {
        self.places.get(owner).copied()
    }

    pub fn head(&self) -> Option<&Waiter<W>> {
        self.waiters.first_key_value().map(|(_, w)| w)
    }

    pub fn pop(&mut self) -> Option<Waiter<W>> {
        let (_, head) = self.waiters.pop_first()?;
        self.places.remove(&head.owner);
        Some(head)
    }

    /// Withdraws `owner`'s queued request (RELEASE cancels a wait this way).
    pub fn remove_owner(&mut self, owner: &[u8]) -> Option<Waiter<W>> {
        self.remove_owner_if(owner, |_| true)
    }

    /// Withdraws `owner`'s queued request if `this` says it is the one meant (a timeout or a
    /// disconnect names its client, which the owner's place must still hold).
    pub fn remove_owner_if(
        &mut self,
        owner: &[u8],
        this: impl FnOnce(&Waiter<W>) -> bool,
    ) -> Option<Waiter<W>> {
        let place = *self.places.get(owner)?;
        if !this(self.waiters.get(&place)?) {
            return None;
        }
        self.places.remove(owner);
        self.waiters.remove(&place)
    }

    /// Renumbers arrival order to 0..len, keeping the order: two queues with the same waiters in
    /// the same order then compare equal. For the model checker's state space; the module never
    /// needs it.
    pub fn canonicalize(&mut self) {
        let waiters = std::mem::take(&mut self.waiters);
        self.places.clear();
        self.next_seq = 0;
        for (_, mut w) in waiters {
            w.seq = self.next_seq;
            self.next_seq += 1;
            self.places.insert(w.owner.clone(), (w.rank, w.seq));
            self.waiters.insert((w.rank, w.seq), w);
        }
    }

    /// Removes the waiters `gone` says are gone and returns them, in service order.
    pub fn remove_where(&mut self, mut gone: impl FnMut(&Waiter<W>) -> bool) -> Vec<Waiter<W>> {
        let leaving: Vec<Place> = self
            .waiters
            .iter()
            .filter(|(_, w)| gone(w))
            .map(|(&place, _)| place)
            .collect();
        let mut out = Vec::with_capacity(leaving.len());
        for place in leaving {
            if let Some(w) = self.waiters.remove(&place) {
                self.places.remove(&w.owner);
                out.push(w);
            }
        }
        out
    }
}

/// An ACQUIRE as the rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    pub owner: &'a [u8],
    /// The exclusive lock, a shared hold or a permit.
    pub want: Want,
    pub reentrant: bool,
    /// `WAIT`: queue when the resource is not available (never inside MULTI, scripts or
    /// replicas).
    pub wait: bool,
    pub ticket: Option<u64>,
    /// The service rank: the ticket, or the arrival time in microseconds.
    pub rank: u64,
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
