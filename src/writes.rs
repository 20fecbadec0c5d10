//! The writes that commands and handoffs share, one set for every kind of resource: a grant, a
//! change of the owner's leases, a removal, a downgrade. Each changes the resource's holders
//! through the key layer's one interface ([`Edit`]; how they are stored is the key layer's
//! business), replicates its *effect* holder by holder (one `DLOCK.APPLY` each; a grant that
//! leaves one exclusive holder as the whole resource; or `DEL`), and tells watchers. Each costs
//! O(log n) in the holders, plus at most [`PRUNE_PER_WRITE`] ended leases cleared.

use std::ffi::CStr;
use std::os::raw::c_int;

use dlock_core::node::deadline_at;
use dlock_core::{GrantRefused, Mode, Want};
use redis_module::{Context, RedisError};

use crate::keyspace::edit::Edit;
use crate::keyspace::{notify, Lease, LockKey, Slot};
use crate::node::node;
use crate::replication::effects::{self, Apply, Scope};
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
    settle_newest(key);
    let token = issue_token(ctx, server::context_flags(ctx.ctx), now_us)?;
    let lease = Lease {
        token,
        holds: 1,
        deadline_ms: deadline_at(now_us / 1000, ttl_ms),
    };
    let gone = put_grant(ctx, key, (owner, want), lease, now_us / 1000).map_err(Refusal::Error)?;
    Ok(Grant { token, gone })
}

/// A value that entered the keyspace a moment ago (RESTOREd in the same transaction or script,
/// before its arrival is settled, `keyspace::arrivals`) never sees a smaller token granted after
/// it: the counter rises to its newest token before a grant issues one.
pub fn settle_newest(key: &LockKey<'_>) {
    if let Some(newest) = key.newest_token() {
        node().raise_counter(newest);
    }
}

/// Several keys granted to `owner` at once (a set, dlock_core::sets): one token for all, issued
/// after every member's newest token raised the counter; the same lease on each. Refused as a
/// whole (nothing written) during the quarantine, under an evicting policy, or when exhausted.
/// Returns the token and, per member, the holders cleared on the way.
pub fn grant_set(
    ctx: &Context,
    members: &mut [(LockKey<'_>, Want)],
    owner: Owner<'_>,
    ttl_ms: u64,
    now_us: u64,
) -> Result<(u64, Vec<Vec<Slot>>), Refusal> {
    members.iter().for_each(|(key, _)| settle_newest(key));
    let token = issue_token(ctx, server::context_flags(ctx.ctx), now_us)?;
    let lease = Lease {
        token,
        holds: 1,
        deadline_ms: deadline_at(now_us / 1000, ttl_ms),
    };
    let now_ms = now_us / 1000;
    let mut gone = Vec::with_capacity(members.len());
    for i in 0..members.len() {
        let (key, want) = &mut members[i];
        match put_grant(ctx, key, (owner, *want), lease, now_ms) {
            Ok(cleared) => gone.push(cleared),
            Err(error) => {
                // All or nothing: the members written so far are taken back.
                for (key, want) in &mut members[..i] {
                    let entry = [(owner.bytes, want.mode())];
                    let _ = remove(ctx, key, &entry, (notify::REVOKE, now_ms));
                }
                return Err(Refusal::Error(error));
            }
        }
    }
    Ok((token, gone))
}

/// Stores a granted `lease` (its token issued) for `owner` and replicates it. The rules said the
/// resource admits it, so any stored holder it cannot coexist with has a lease that ended: those
/// go first (returned).
fn put_grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (owner, want): (Owner<'_>, Want),
    lease: Lease,
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let mut gone = Vec::new();
    if want == Want::Exclusive {
        // Nobody holds it: one exclusive holder replaces whatever the key held.
        key.put_sole(owner.bytes, lease)?;
        let change = apply_of(owner, lease, Scope::Sole);
        effects::apply(ctx, server::context_flags(ctx.ctx), key.name(), &change);
    } else {
        gone = join(ctx, key, (owner, want), lease, now_ms)?;
    }
    key.changed(notify::ACQUIRE);
    stats::count(&GRANTS);
    Ok(gone)
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

/// A shared entry or a permit joins the resource: first the stored holders it cannot coexist
/// with go (their leases ended: the rules admitted it), then it is set. Returns the holders
/// cleared on the way, each replicated before the new one.
fn join(
    ctx: &Context,
    key: &mut LockKey<'_>,
    (owner, want): (Owner<'_>, Want),
    lease: Lease,
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let (flags, name) = (server::context_flags(ctx.ctx), key.name());
    if key
        .counted_limit()?
        .is_some_and(|limit| limit != want.limit())
    {
        remove_all(ctx, key, None); // a resource of another kind, whole: one DEL
    }
    let mut edit = Edit::open(key, Some(want.limit()))?;
    let mut gone = make_room(&mut edit, want, now_ms)?;
    replicate_gone(ctx, (flags, name), &gone, want.limit());
    let slot = slot(owner.bytes, want.mode(), lease);
    gone.extend(insert(ctx, (flags, name), edit, (owner, slot), now_ms)?);
    Ok(gone)
}

/// Clears the stored holders a new shared entry or permit cannot coexist with (their leases
/// ended): an ended exclusive entry; a full semaphore's soonest-ended permits.
fn make_room(edit: &mut Edit<'_, '_>, want: Want, now_ms: u64) -> Result<Vec<Slot>, RedisError> {
    let mut gone = Vec::new();
    if want == Want::Shared {
        if let Some(owner) = edit.exclusive_owner() {
            if let Some(lease) = edit.remove(&owner, Mode::Exclusive)? {
                stats::count(&EXPIRED);
                gone.push(slot(&owner, Mode::Exclusive, lease));
            }
        }
    }
    if let Want::Permit { limit } = want {
        let excess = (edit.len() + 1).saturating_sub(limit as usize);
        let ended = edit.prune(now_ms, excess)?;
        stats::count_n(&EXPIRED, ended.len());
        gone.extend(ended);
    }
    Ok(gone)
}

/// Sets a holder through `edit` (checked: it must coexist), replicates it, clears a few ended
/// leases (returned), settles the form. The owner's stored entry in the same mode, if any, has
/// a lease that ended (the rules saw none): the new lease replaces it, as a replica's
/// `DLOCK.APPLY` of the same holder does.
fn insert(
    ctx: &Context,
    (flags, name): (c_int, &Arg),
    mut edit: Edit<'_, '_>,
    (owner, slot): (Owner<'_>, Slot),
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let (mode, lease, limit) = (slot.mode, slot.lease, edit.limit());
    if edit.set(slot)? {
        stats::count(&EXPIRED); // the ended lease it replaced
    }
    replicate_holder(ctx, (flags, name), owner, (mode, limit), lease);
    finish(ctx, (flags, name), edit, now_ms)
}

/// Replicates one holder of the resource under the key `name` as it is now (`holds` 0: gone;
/// `flags`: the context's).
#[inline(always)]
fn replicate_holder(
    ctx: &Context,
    (flags, name): (c_int, &Arg),
    owner: Owner<'_>,
    (mode, limit): (Mode, u32),
    lease: Lease,
) {
    let scope = Scope::Holder { mode, limit };
    effects::apply(ctx, flags, name, &apply_of(owner, lease, scope));
}

/// Replicates the removal of each of `gone` from the resource under the key `name`.
fn replicate_gone(ctx: &Context, target: (c_int, &Arg), gone: &[Slot], limit: u32) {
    for s in gone {
        let owner = Owner {
            bytes: &s.owner,
            arg: None,
        };
        let lease = Lease {
            holds: 0,
            ..s.lease
        };
        replicate_holder(ctx, target, owner, (s.mode, limit), lease);
    }
}

/// Ends an edit: clears up to [`PRUNE_PER_WRITE`] ended leases (counted, replicated and
/// returned), then settles the form.
#[inline(always)]
fn finish(
    ctx: &Context,
    target: (c_int, &Arg),
    mut edit: Edit<'_, '_>,
    now_ms: u64,
) -> Result<Vec<Slot>, RedisError> {
    let limit = edit.limit();
    let pruned = edit.prune(now_ms, PRUNE_PER_WRITE)?;
    edit.finish()?;
    stats::count_n(&EXPIRED, pruned.len()); // leases that ended unreleased
    replicate_gone(ctx, target, &pruned, limit);
    Ok(pruned)
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
    let who = Owner {
        bytes: owner,
        arg: None,
    };
    let (flags, name) = (server::context_flags(ctx.ctx), key.name());
    let edit = Edit::open(key, Some(0))?;
    let pruned = insert(
        ctx,
        (flags, name),
        edit,
        (who, slot(owner, Mode::Shared, lease)),
        now_ms,
    )?;
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
    let target = (server::context_flags(ctx.ctx), key.name());
    let mut edit = Edit::open(key, None)?;
    let limit = edit.limit();
    for &mode in modes {
        if let Some(lease) = edit.update(owner.bytes, mode, &f)? {
            replicate_holder(ctx, target, owner, (mode, limit), lease);
        }
    }
    let pruned = finish(ctx, target, edit, now_ms)?;
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
    key.put_sole(owner.bytes, lease)?;
    let flags = server::context_flags(ctx.ctx);
    effects::apply(ctx, flags, key.name(), &apply_of(owner, lease, Scope::Sole));
    key.changed(event);
    Ok(())
}

/// Removes the given entries (a release's last hold, a wound's victims); the resource keeps its
/// other holders. Returns the ended leases cleared besides.
pub fn remove(
    ctx: &Context,
    key: &mut LockKey<'_>,
    entries: &[(&[u8], Mode)],
    (event, now_ms): (&CStr, u64),
) -> Result<Vec<Slot>, RedisError> {
    let target = (server::context_flags(ctx.ctx), key.name());
    let mut edit = Edit::open(key, None)?;
    let limit = edit.limit();
    for &(owner, mode) in entries {
        if let Some(lease) = edit.remove(owner, mode)? {
            let gone = Owner {
                bytes: owner,
                arg: None,
            };
            let lease = Lease { holds: 0, ..lease };
            replicate_holder(ctx, target, gone, (mode, limit), lease);
        }
    }
    let pruned = finish(ctx, target, edit, now_ms)?;
    key.changed(event);
    Ok(pruned)
}

/// Deletes the resource under `key`, whatever it holds, and replicates the deletion; tells
/// watchers with `event` when given.
pub fn remove_all(ctx: &Context, key: &mut LockKey<'_>, event: Option<&CStr>) {
    key.delete();
    effects::delete(ctx, key.name());
    if let Some(event) = event {
        key.changed(event);
    }
}

fn apply_of<'a>(owner: Owner<'a>, lease: Lease, scope: Scope) -> Apply<'a> {
    Apply {
        owner: owner.bytes,
        owner_arg: owner.arg,
        lease,
        scope,
    }
}

fn slot(owner: &[u8], mode: Mode, lease: Lease) -> Slot {
    Slot {
        owner: owner.into(),
        mode,
        lease,
    }
}
