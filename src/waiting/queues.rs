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
    /// Parked client id -> its key and owner, for the timeout and disconnect callbacks (the
    /// owner finds its place in the queue without a scan).
    parked_at: HashMap<usize, (QueueKey, Vec<u8>)>,
    waiters: usize,
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
    let before = state.queue.len();
    let result = f(state);
    let after = state.queue.len();
    let holds_nothing = state.marks.is_empty();
    if state.queue.is_empty() && holds_nothing && state.timer.is_none() {
        r.keys.remove(key);
    }
    r.waiters = (r.waiters + after).saturating_sub(before);
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
    let replaced = with_key(key, |k| {
        k.queue.push(
            wait.owner,
            wait.rank,
            wait.ticketed,
            (wait.ttl_ms, wait.want),
            parked,
        )
    })
    .flatten();
    REGISTRY.with_borrow_mut(|r| {
        if let Some(old) = &replaced {
            r.parked_at.remove(&old.handle.id());
        }
        r.parked_at
            .insert(parked.id(), (key.clone(), wait.owner.to_vec()));
    });
    replaced
}

/// Puts a waiter taken off the queue back in its key (a handoff that could not grant yet).
pub fn requeue(key: &QueueKey, waiter: Waiter<Parked>) {
    let wait = Wait {
        owner: &waiter.owner,
        rank: waiter.rank,
        ticketed: waiter.ticketed,
        ttl_ms: waiter.ttl_ms,
        want: waiter.want,
    };
    enqueue(key, &wait, waiter.handle);
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

/// The first waiter's owner and what it wants, without taking it off the queue.
pub fn head(key: &QueueKey) -> Option<(Vec<u8>, Want)> {
    peek(key, |k| k?.queue.head().map(|w| (w.owner.clone(), w.want)))
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

/// Takes a parked client out of whatever queue it is in (timeout, disconnect).
pub fn leave(id: usize) -> Option<Parked> {
    let (key, owner) = REGISTRY.with_borrow_mut(|r| r.parked_at.remove(&id))?;
    let gone = update(&key, |k| {
        k.queue.remove_owner_if(&owner, |w| w.handle.id() == id)
    })?;
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
        (waiters, timers)
    })
}

/// Removes every key that `leaving` selects, with its waiters, tentative mark and timer
/// (its slot left this node); returns the waiters, to be answered, and the timers, to be stopped.
pub fn take_where(leaving: impl Fn(&QueueKey) -> bool) -> (Vec<Waiter<Parked>>, Vec<u64>) {
    REGISTRY.with_borrow_mut(|r| {
        let leaving_keys: Vec<QueueKey> = r.keys.keys().filter(|p| leaving(p)).cloned().collect();
        let mut waiters = Vec::new();
        let mut timers = Vec::new();
        for key in leaving_keys {
            let Some(mut state) = r.keys.remove(&key) else {
                continue;
            };
            let gone = state.queue.remove_where(|_| true);
            r.waiters = r.waiters.saturating_sub(gone.len());
            for waiter in &gone {
                r.parked_at.remove(&waiter.handle.id());
            }
            waiters.extend(gone);
            timers.extend(state.timer);
        }
        (waiters, timers)
    })
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

/// Clients waiting now, over all keys.
pub fn waiters() -> usize {
    REGISTRY.with_borrow(|r| r.waiters)
}

fn forget<'a>(gone: impl Iterator<Item = &'a Waiter<Parked>>) {
    REGISTRY.with_borrow_mut(|r| {
        for w in gone {
            r.parked_at.remove(&w.handle.id());
        }
    });
}

/// Waiters queued on one key.
pub fn waiting(key: &QueueKey) -> usize {
    peek(key, |s| s.map_or(0, |s| s.queue.len()))
}
