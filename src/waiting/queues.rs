//! The per-key waiting state, in module memory (never persisted or replicated): the queue of
//! parked clients and the tentative marks of ticketed grants not yet committed by FENCE.
//!
//! Redis runs every command, timer and callback that touches it on its main thread, so it
//! lives in a thread-local. Functions here never call into Redis while borrowing it: callers
//! take out what they need and act afterwards (answering a client, opening a key and the
//! keyspace notifications that may follow all stay outside the borrow).

use std::cell::RefCell;
use std::collections::HashMap;

use dlock_core::queue::{Queue, Waiter};
use dlock_core::tentative::Tentatives;
use dlock_core::Want;

use super::parked::Parked;

/// The registry's name for a lock key: its database and key name. (Not to be confused with the
/// fingerprint a lock stores of where it was granted, `keyspace::places::place`.)
pub type QueueKey = (i32, Vec<u8>);

/// One waiting ACQUIRE, as its queue keeps it.
pub struct Wait<'a> {
    pub owner: &'a [u8],
    /// The service order: the ticket, or the arrival time in µs.
    pub rank: u64,
    pub ticketed: bool,
    /// The lease the waiter asked for, granted from the moment it is served.
    pub ttl_ms: u64,
    /// The exclusive lock, a shared hold or a permit.
    pub want: Want,
}

#[derive(Default)]
pub struct KeyState {
    pub queue: Queue<Parked>,
    /// The holders' grants not yet committed (a mark describes its owner's entries only while
    /// their token is the one it was made for).
    pub marks: Tentatives,
    /// The pending timer that watches this key's deadline or retries its handoff.
    pub timer: Option<u64>,
    /// When it fires (unix ms).
    pub timer_due_ms: u64,
}

#[derive(Default)]
struct Registry {
    keys: HashMap<QueueKey, KeyState>,
    /// Parked client id -> its keys (one, or a set's members) and owner, for the timeout and
    /// disconnect callbacks (the owner finds its places without a scan), and so that a set
    /// leaving one queue leaves all of them.
    parked_at: HashMap<usize, (Vec<QueueKey>, Vec<u8>)>,
    /// Arrivals numbered once for every queue of the node: all queues follow one order, so a
    /// set waiting in several is placed alike in each (dlock_core::sets: no cycle of heads).
    next_seq: u64,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Runs `f` on the key's state, created empty if absent (to store something in it); `None`
/// never happens, it only spares the caller a panic path.
pub fn with_key<R>(key: &QueueKey, f: impl FnOnce(&mut KeyState) -> R) -> Option<R> {
    REGISTRY.with_borrow_mut(|r| change(r, key, true, f))
}

/// Runs `f` on the key's state if there is any: a key nobody waits on costs one lookup and no
/// allocation.
pub fn update<R>(key: &QueueKey, f: impl FnOnce(&mut KeyState) -> R) -> Option<R> {
    REGISTRY.with_borrow_mut(|r| change(r, key, false, f))
}

/// Applies `f` to one key's state (creating it first if `create`), keeps the waiter total in
/// step, and drops the entry once it holds nothing.
fn change<R>(
    r: &mut Registry,
    key: &QueueKey,
    create: bool,
    f: impl FnOnce(&mut KeyState) -> R,
) -> Option<R> {
    let state = if create {
        r.keys.entry(key.clone()).or_default()
    } else {
        r.keys.get_mut(key)?
    };
    let result = f(state);
    let holds_nothing = state.marks.is_empty();
    if state.queue.is_empty() && holds_nothing && state.timer.is_none() {
        r.keys.remove(key);
    }
    Some(result)
}

/// No key has a queue, a tentative mark or a timer: every lookup would miss, so callers skip
/// naming the key.
pub fn idle() -> bool {
    REGISTRY.with_borrow(|r| r.keys.is_empty())
}

/// Reads the key's state without creating it.
pub fn peek<R>(key: &QueueKey, f: impl FnOnce(Option<&KeyState>) -> R) -> R {
    REGISTRY.with_borrow(|r| f(r.keys.get(key)))
}

/// Queues a parked client; returns the same owner's earlier wait it replaces.
pub fn enqueue(key: &QueueKey, wait: &Wait<'_>, parked: Parked) -> Option<Waiter<Parked>> {
    enqueue_at(key, wait, parked, None)
}

/// Queues a parked client at its arrival number `seq` (a fresh one when `None`).
fn enqueue_at(
    key: &QueueKey,
    wait: &Wait<'_>,
    parked: Parked,
    seq: Option<u64>,
) -> Option<Waiter<Parked>> {
    let seq = seq.unwrap_or_else(next_seq);
    let replaced = with_key(key, |k| push(k, wait, parked, seq)).flatten();
    forget(replaced.iter());
    REGISTRY.with_borrow_mut(|r| {
        let at = (vec![key.clone()], wait.owner.to_vec());
        r.parked_at.insert(parked.id(), at);
    });
    replaced
}

fn push(k: &mut KeyState, wait: &Wait<'_>, parked: Parked, seq: u64) -> Option<Waiter<Parked>> {
    let place = (wait.rank, seq);
    let asked = (wait.ttl_ms, wait.want);
    k.queue
        .push_at(wait.owner, place, wait.ticketed, asked, parked)
}

fn next_seq() -> u64 {
    REGISTRY.with_borrow_mut(|r| {
        let seq = r.next_seq;
        r.next_seq = seq.saturating_add(1);
        seq
    })
}

/// Queues a parked set request in every member's queue at one arrival number; returns the
/// same owner's earlier waits it replaces (to be answered).
pub fn enqueue_set(
    members: &[(QueueKey, Want)],
    wait: &Wait<'_>,
    parked: Parked,
) -> Vec<Waiter<Parked>> {
    let seq = next_seq();
    let mut replaced = Vec::new();
    for (key, want) in members {
        let member = Wait {
            want: *want,
            ..*wait
        };
        replaced.extend(with_key(key, |k| push(k, &member, parked, seq)).flatten());
    }
    let replaced = unique(replaced);
    forget(replaced.iter());
    REGISTRY.with_borrow_mut(|r| {
        let keys = members.iter().map(|(key, _)| key.clone()).collect();
        r.parked_at.insert(parked.id(), (keys, wait.owner.to_vec()));
    });
    replaced
}

/// The keys a parked client waits on: one, or a set's members (empty once it left).
pub fn parked_keys(id: usize) -> Vec<QueueKey> {
    REGISTRY
        .with_borrow(|r| r.parked_at.get(&id).map(|(keys, _)| keys.clone()))
        .unwrap_or_default()
}

/// Takes the parked client `id` out of every queue it waits in (a set being served).
pub fn take(id: usize) -> Option<Waiter<Parked>> {
    let keys = parked_keys(id);
    let mut taken = None;
    for key in &keys {
        let owner = REGISTRY.with_borrow(|r| r.parked_at.get(&id).map(|(_, o)| o.clone()));
        let Some(owner) = owner else { break };
        let gone = update(key, |k| {
            k.queue.remove_owner_if(&owner, |w| w.handle.id() == id)
        });
        taken = taken.or(gone.flatten());
    }
    forget(taken.iter());
    taken
}

/// Puts a waiter taken off the queue back in its key (a handoff that could not grant yet), at
/// its place.
pub fn requeue(key: &QueueKey, waiter: Waiter<Parked>) {
    let wait = Wait {
        owner: &waiter.owner,
        rank: waiter.rank,
        ticketed: waiter.ticketed,
        ttl_ms: waiter.ttl_ms,
        want: waiter.want,
    };
    enqueue_at(key, &wait, waiter.handle, Some(waiter.seq));
}

/// Records a grant to `owner` on the key, made by a command or a handoff: a ticketed one stays
/// tentative (a wound may revoke it) until its FENCE commits it. A grant of the whole resource
/// (`alone`) ends every earlier mark.
pub fn mark(key: &QueueKey, owner: &[u8], (token, ticket): (u64, Option<u64>), alone: bool) {
    if ticket.is_none() && idle() {
        return;
    }
    let change = |k: &mut KeyState| {
        if alone {
            k.marks.clear();
        }
        match ticket {
            Some(ticket) => k.marks.mark(owner, token, ticket),
            None => k.marks.unmark(owner),
        }
    };
    if ticket.is_some() {
        with_key(key, change);
    } else {
        update(key, change);
    }
}

/// Forgets the marks of these owners (their grant was committed, released, revoked or ended).
pub fn unmark<'a>(key: &QueueKey, owners: impl IntoIterator<Item = &'a [u8]>) {
    if !idle() {
        update(key, |k| owners.into_iter().for_each(|o| k.marks.unmark(o)));
    }
}

/// Forgets every mark of the key (nothing it describes is held any more).
pub fn clear_marks(key: &QueueKey) {
    if !idle() {
        update(key, |k| k.marks.clear());
    }
}

/// The first waiter of a queue, as a handoff reads it.
pub struct Head {
    pub owner: Vec<u8>,
    pub want: Want,
    /// Its parked client.
    pub id: usize,
    pub ttl_ms: u64,
    pub ticket: Option<u64>,
}

/// The first waiter, without taking it off the queue.
pub fn head(key: &QueueKey) -> Option<Head> {
    peek(key, |k| {
        k?.queue.head().map(|w| Head {
            owner: w.owner.clone(),
            want: w.want,
            id: w.handle.id(),
            ttl_ms: w.ttl_ms,
            ticket: w.ticketed.then_some(w.rank),
        })
    })
}

/// Whether `owner`'s grant of `token` on `key` is still marked tentative.
pub fn is_tentative(key: &QueueKey, owner: &[u8], token: u64) -> bool {
    peek(key, |k| {
        k.and_then(|k| k.marks.get(owner))
            .is_some_and(|m| m.token == token)
    })
}

/// Takes the first waiter in service order off the key's queue.
pub fn pop(key: &QueueKey) -> Option<Waiter<Parked>> {
    let head = update(key, |k| k.queue.pop()).flatten();
    forget(head.iter());
    head
}

/// Withdraws `owner`'s wait on the key.
pub fn withdraw(key: &QueueKey, owner: &[u8]) -> Option<Waiter<Parked>> {
    let gone = update(key, |k| k.queue.remove_owner(owner)).flatten();
    forget(gone.iter());
    gone
}

/// Takes a parked client out of whatever queues it is in (timeout, disconnect).
pub fn leave(id: usize) -> Option<Parked> {
    let (keys, owner) = REGISTRY.with_borrow_mut(|r| r.parked_at.remove(&id))?;
    let mut gone = None;
    for key in &keys {
        let left = update(key, |k| {
            k.queue.remove_owner_if(&owner, |w| w.handle.id() == id)
        });
        gone = gone.or(left.flatten());
    }
    gone.map(|w| w.handle)
}

/// Empties every queue and forgets every tentative mark (the node became a replica); returns
/// the waiters, to be answered, and the timers, to be stopped.
pub fn drain() -> (Vec<Waiter<Parked>>, Vec<u64>) {
    REGISTRY.with_borrow_mut(|r| {
        let registry = std::mem::take(r);
        let mut waiters = Vec::new();
        let mut timers = Vec::new();
        for (_, mut state) in registry.keys {
            waiters.extend(state.queue.remove_where(|_| true));
            timers.extend(state.timer);
        }
        (unique(waiters), timers)
    })
}

/// Each parked client once: a set waits in several queues, and is answered once.
fn unique(mut waiters: Vec<Waiter<Parked>>) -> Vec<Waiter<Parked>> {
    let mut seen = std::collections::HashSet::new();
    waiters.retain(|w| seen.insert(w.handle.id()));
    waiters
}

/// Removes every key that `leaving` selects, with its waiters, tentative mark and timer
/// (its slot left this node); returns the waiters, to be answered, and the timers, to be stopped.
pub fn take_where(leaving: impl Fn(&QueueKey) -> bool) -> (Vec<Waiter<Parked>>, Vec<u64>) {
    let (waiters, timers) = REGISTRY.with_borrow_mut(|r| {
        let leaving_keys: Vec<QueueKey> = r.keys.keys().filter(|p| leaving(p)).cloned().collect();
        let mut waiters = Vec::new();
        let mut timers = Vec::new();
        for key in leaving_keys {
            let Some(mut state) = r.keys.remove(&key) else {
                continue;
            };
            let gone = state.queue.remove_where(|_| true);
            waiters.extend(gone);
            timers.extend(state.timer);
        }
        (waiters, timers)
    });
    // A set leaves its other queues too (its members share a slot: normally none is left).
    forget(waiters.iter());
    (unique(waiters), timers)
}

/// Every key with any state: waiters, a tentative mark or a timer.
pub fn keys() -> Vec<QueueKey> {
    REGISTRY.with_borrow(|r| r.keys.keys().cloned().collect())
}

/// Every key with waiters (to hand each off after a FLUSHALL).
pub fn keys_with_waiters() -> Vec<QueueKey> {
    REGISTRY.with_borrow(|r| {
        r.keys
            .iter()
            .filter(|(_, k)| !k.queue.is_empty())
            .map(|(key, _)| key.clone())
            .collect()
    })
}

/// Every key of database `db` with waiters: its name, how many wait and how long the oldest has
/// waited. One pass over the registry (keys with waiting state, not the keyspace).
pub fn queued_in(db: i32) -> Vec<(Vec<u8>, usize, std::time::Duration)> {
    REGISTRY.with_borrow(|r| {
        r.keys
            .iter()
            .filter(|((key_db, _), state)| *key_db == db && !state.queue.is_empty())
            .map(|((_, name), state)| {
                let oldest = state.queue.iter().map(|w| w.handle.since.elapsed()).max();
                (name.clone(), state.queue.len(), oldest.unwrap_or_default())
            })
            .collect()
    })
}

/// Clients waiting now, over all keys (a set waiting on several keys counts once).
pub fn waiters() -> usize {
    REGISTRY.with_borrow(|r| r.parked_at.len())
}

/// These waiters left a queue: they leave every other queue they were in too (a set waits in
/// all of its members' or in none), and the registry forgets their client.
fn forget<'a>(gone: impl Iterator<Item = &'a Waiter<Parked>>) {
    REGISTRY.with_borrow_mut(|r| {
        for w in gone {
            let id = w.handle.id();
            let Some((keys, owner)) = r.parked_at.remove(&id) else {
                continue;
            };
            if keys.len() < 2 {
                continue; // one queue, which the caller took it out of
            }
            for key in &keys {
                change(r, key, false, |k| {
                    k.queue.remove_owner_if(&owner, |w| w.handle.id() == id)
                });
            }
        }
    });
}

/// Waiters queued on one key.
pub fn waiting(key: &QueueKey) -> usize {
    peek(key, |s| s.map_or(0, |s| s.queue.len()))
}
