//! The writes that commands and handoffs share, one set for every kind of resource: a grant, a
//! change of the owner's leases, a removal, a downgrade. Each stores the resource in its form,
//! replicates its *effect* holder by holder (a plain lock as one `DLOCK.APPLY`, a table's holder
//! as one `DLOCK.APPLY ... MODE`, or `DEL`), and tells watchers. Each costs O(log n) in the
//! holders, plus at most [`PRUNE_PER_WRITE`] ended leases cleared.

use std::ffi::CStr;
use std::os::raw::c_int;

use dlock_core::node::deadline_at;
use dlock_core::{GrantRefused, Mode, Want};
use redis_module::{Context, RedisError};

use crate::keyspace::compact::Record;
use crate::keyspace::key::Stored;
use crate::keyspace::table::{Lease, Slot};
use crate::keyspace::{notify, LockKey};
use crate::node::node;
use crate::replication::effects;
use crate::stats::{self, EVICTION_REFUSALS, EXPIRED, GRANTS};
use crate::wire::{errors, Arg};
use crate::{config, server};

/// How many ended leases a write to a table clears besides its own change: ended holders count
/// for nothing, but the rules walk past them to count the live ones, so writes keep them few.
pub const PRUNE_PER_WRITE: usize = 16;

/// A grant made: its token, and the stored holders it cleared on the way (ended leases: their
/// tentative marks go with them).
pub struct Grant {
    pub token: u64,
    pub gone: Vec<Slot>,
}

/// Why a grant was not made.
pub enum Refusal {
    /// The restart quarantine: grants resume in `ms_left`.
    Quarantined {
        ms_left: u64,
    },
    Error(RedisError),
}

impl From<Refusal> for RedisError {
    fn from(refusal: Refusal) -> RedisError {
        match refusal {
            Refusal::Quarantined { ms_left } => errors::quarantined(ms_left),
            Refusal::Error(error) => error,
        }
    }
}

/// Who a write is for: the owner, and the command's owner argument when it has one (passed on
/// to the replicated effect as is).
#[derive(Clone, Copy)]
pub struct Owner<'a> {
    pub bytes: &'a [u8],
    pub arg: Option<&'a Arg>,
}

/// A fresh grant of `want` to `owner`, dated `now_us` (the wall clock the caller read the
/// resource at): refused while the eviction policy could drop it, during the restart
/// quarantine, and once the counter is exhausted. The rules said the resource admits it, so any
/// stored holder it cannot coexist with has a lease that ended: those go first.
pub fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (owner, want): (Owner<'_>, Want),
    ttl_ms: u64,
    now_us: u64,
) -> Result<Grant, Refusal> {
    let flags = server::context_flags(ctx.ctx);
    floor_at_stored(key);
    let token = issue_token(ctx, flags, now_us)?;
    let now_ms = now_us / 1000;
    let lease = Lease {
        token,
        holds: 1,
        deadline_ms: deadline_at(now_ms, ttl_ms),
    };
    let mut gone = Vec::new();
    if want == Want::Exclusive {
        // Nobody holds it: a plain lock replaces whatever the key held.
        let record = record(key, owner.bytes, lease);
        key.put(&record).map_err(Refusal::Error)?;
        effects::apply_flagged(ctx, flags, key.name(), owner.arg, &record);
    } else {
        gone = make_room(ctx, key, want, now_ms).map_err(Refusal::Error)?;
        let slot = slot(owner.bytes, want.mode(), lease);
        let pruned = insert(ctx, key, slot, want.limit(), now_ms).map_err(Refusal::Error)?;
        gone.extend(pruned);
    }
    key.changed(notify::ACQUIRE);
    stats::count(&GRANTS);
    Ok(Grant { token, gone })
}

/// The node counter rises to every token stored under the key before a grant there: a value
/// that entered the keyspace a moment ago (RESTOREd in the same transaction or script, before its
/// arrival is settled, `keyspace::arrivals`) never sees a smaller token granted after it.
fn floor_at_stored(key: &LockKey<'_>) {
    let newest = match key.stored() {
        Ok(Some(Stored::One(lock))) => lock.token(),
        Ok(Some(Stored::Table(table))) => table.newest_token(),
        _ => return,
    };
    node().raise_counter(newest);
}

/// A fresh token for a grant dated `now_us`: refused while the eviction policy could drop the
/// lock, during the restart quarantine, and once the counter is exhausted.
fn issue_token(ctx: &Context, flags: c_int, now_us: u64) -> Result<u64, Refusal> {
    if server::may_evict(flags) && !config::allow_eviction() {
        stats::count(&EVICTION_REFUSALS);
        let policy = server::eviction_policy(ctx);
        return Err(Refusal::Error(errors::eviction(&policy)));
    }
    node()
        .grant_at(&config::settings(), now_us)
        .map_err(|refused| match refused {
            GrantRefused::Quarantined { ms_left } => Refusal::Quarantined { ms_left },
            GrantRefused::Exhausted => Refusal::Error(errors::exhausted()),
        })
}

/// Clears the stored holders a new shared entry or permit cannot coexist with (their leases
/// ended): a plain lock; a table of another kind (whole: one `DEL`); an ended exclusive entry;
/// a full semaphore's soonest-ended permit.
fn make_room(
    ctx: &Context,
    key: &mut LockKey<'_>,
    want: Want,
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let place = key.place();
    let (clear, exclusive) = match key.stored()? {
        None => (false, None),
        Some(Stored::Table(t)) if t.place == place && t.limit() == want.limit() => {
            let x = t.exclusive().map(|x| x.owner.clone());
            (false, x.filter(|_| want == Want::Shared))
        }
        Some(_) => (true, None),
    };
    if clear {
        key.delete();
        effects::delete(ctx, key.name());
        return Ok(Vec::new());
    }
    let table = key.table_mut(want.limit())?;
    let mut gone = Vec::new();
    if let Some(x) = exclusive.and_then(|owner| table.remove(&owner, Mode::Exclusive)) {
        stats::count(&EXPIRED);
        gone.push(x);
    }
    if let Want::Permit { limit } = want {
        let excess = (table.len() + 1).saturating_sub(limit as usize);
        let ended = table.prune(now_ms, excess);
        stats::count_n(&EXPIRED, ended.len());
        gone.extend(ended);
    }
    let limit = table.limit();
    for slot in &gone {
        effects::apply_holder(ctx, key.name(), slot, 0, limit);
    }
    Ok(gone)
}

/// Adds a holder to the table under `key` (checked: it must coexist), replicates it, clears a
/// few ended leases (returned), settles the form. The owner's stored entry in the same mode, if
/// any, has a lease that ended (the rules saw none): the new lease replaces it, as a replica's
/// `DLOCK.APPLY` of the same holder does.
fn insert(
    ctx: &Context,
    key: &mut LockKey<'_>,
    slot: Slot,
    limit: u32,
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let table = key.table_mut(limit)?;
    if table.update(&slot.owner, slot.mode, |l| *l = slot.lease) {
        stats::count(&EXPIRED); // the ended lease it replaced
    } else if let Err(why) = table.insert(slot.clone()) {
        return Err(errors::holders_conflict(&why.to_string()));
    }
    effects::apply_holder(ctx, key.name(), &slot, slot.lease.holds, limit);
    let pruned = prune(ctx, key, now_ms)?;
    key.settle()?;
    Ok(pruned)
}

/// Clears up to [`PRUNE_PER_WRITE`] ended leases from the table under `key`, replicating each.
fn prune(ctx: &Context, key: &mut LockKey<'_>, now_ms: u64) -> Result<Vec<Slot>, RedisError> {
    let table = key.table_mut(0)?;
    let limit = table.limit();
    let gone = table.prune(now_ms, PRUNE_PER_WRITE);
    stats::count_n(&EXPIRED, gone.len()); // leases that ended unreleased
    for slot in &gone {
        effects::apply_holder(ctx, key.name(), slot, 0, limit);
    }
    Ok(gone)
}

/// The exclusive holder `owner` takes the shared side too: a shared entry with its token.
/// Returns the ended leases cleared on the way.
pub fn downgrade(
    ctx: &Context,
    key: &mut LockKey<'_>,
    owner: &[u8],
    (token, deadline_ms): (u64, u64),
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let lease = Lease {
        token,
        holds: 1,
        deadline_ms,
    };
    let pruned = insert(ctx, key, slot(owner, Mode::Shared, lease), 0, now_ms)?;
    key.changed(notify::ACQUIRE);
    Ok(pruned)
}

/// Changes the leases of the owner's entries in `modes` (live ones: the caller asked the
/// rules): a renewal, an extension, a commit, one hold released. Returns the ended leases
/// cleared on the way.
pub fn change(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (owner, modes): (Owner<'_>, &[Mode]),
    (event, now_ms): (&CStr, u64),
    f: impl Fn(&mut Lease),
) -> Result<Vec<Slot>, RedisError> {
    let place = key.place();
    let mut pruned = Vec::new();
    if let Some(mut lease) = key.compact_lease() {
        f(&mut lease);
        let Some(mut lock) = key.compact_mut() else {
            return Err(errors::cannot_store());
        };
        lock.set_token(lease.token);
        lock.set_holds(lease.holds);
        lock.set_deadline(lease.deadline_ms);
        lock.set_follows_key_ttl(false);
        key.expire_at(lease.deadline_ms);
        let record = Record {
            owner: owner.bytes,
            token: lease.token,
            holds: lease.holds,
            deadline_ms: lease.deadline_ms,
            place,
        };
        effects::apply(ctx, key.name(), owner.arg, &record);
    } else {
        let name = key.name();
        let table = key.table_mut(0)?;
        let limit = table.limit();
        for &mode in modes {
            if table.update(owner.bytes, mode, &f) {
                if let Some(slot) = table.get(owner.bytes, mode) {
                    effects::apply_holder(ctx, name, slot, slot.lease.holds, limit);
                }
            }
        }
        pruned = prune(ctx, key, now_ms)?;
        key.settle()?;
    }
    key.changed(event);
    Ok(pruned)
}

/// Gives a plain lock to another owner, its lease unchanged (PROCLAIM), and replicates it.
pub fn replace_holder(
    ctx: &Context,
    key: &mut LockKey<'_>,
    owner: Owner<'_>,
    lease: Lease,
    event: &CStr,
) -> Result<(), RedisError> {
    let record = record(key, owner.bytes, lease);
    key.put(&record)?;
    effects::apply(ctx, key.name(), owner.arg, &record);
    key.changed(event);
    Ok(())
}

/// Removes the given entries (a release's last hold, a wound's victims): a plain lock goes with
/// its key; a table keeps its other holders. Returns the ended leases a table cleared besides.
pub fn remove(
    ctx: &Context,
    key: &mut LockKey<'_>,
    entries: &[(&[u8], Mode)],
    (event, now_ms): (&CStr, u64),
) -> Result<Vec<Slot>, RedisError> {
    let mut pruned = Vec::new();
    match key.stored()? {
        Some(Stored::Table(_)) => {
            let name = key.name();
            let table = key.table_mut(0)?;
            let limit = table.limit();
            for &(owner, mode) in entries {
                if let Some(slot) = table.remove(owner, mode) {
                    effects::apply_holder(ctx, name, &slot, 0, limit);
                }
            }
            pruned = prune(ctx, key, now_ms)?;
            key.settle()?;
            key.changed(event);
        }
        _ => remove_all(ctx, key, event),
    }
    Ok(pruned)
}

/// Deletes the resource under `key`, whatever it holds, and replicates the deletion.
pub fn remove_all(ctx: &Context, key: &mut LockKey<'_>, event: &CStr) {
    key.delete();
    effects::delete(ctx, key.name());
    key.changed(event);
}

fn record<'a>(key: &LockKey<'_>, owner: &'a [u8], lease: Lease) -> Record<'a> {
    Record {
        owner,
        token: lease.token,
        holds: lease.holds,
        deadline_ms: lease.deadline_ms,
        place: key.place(),
    }
}

fn slot(owner: &[u8], mode: Mode, lease: Lease) -> Slot {
    Slot {
        owner: owner.into(),
        mode,
        lease,
    }
}
