//! A set held (docs/multi.md): one [`LockGuard`] per slot group. Outside a Redis Cluster, or with
//! every key in one slot, that is one group and one guard: the set is one lock to the nodes. On a
//! Cluster node a set whose keys span slots is taken group by group in one global order (slot,
//! then key; [`crate::set_groups`]), each group a set of its own, everything given back when a
//! group fails; it then holds a token per group.

use std::time::Duration;

use futures::future::join_all;

use crate::errors::Error;
use crate::lock::{LockGuard, Watchdog};

/// The groups of a set held, and which group holds each resource (in the caller's order).
pub struct SetGuard {
    names: Vec<String>,
    group_of: Vec<usize>,
    groups: Vec<LockGuard>,
    /// A group was lost: the others were given back, and the set holds nothing.
    lost: bool,
}

impl SetGuard {
    pub(crate) fn new(names: Vec<String>, group_of: Vec<usize>, groups: Vec<LockGuard>) -> Self {
        SetGuard {
            names,
            group_of,
            groups,
            lost: false,
        }
    }

    /// The resources, in the order given.
    pub fn resources(&self) -> &[String] {
        &self.names
    }

    /// How many slot groups hold the set: 1 except for a cross-slot set on a Redis Cluster.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The set's one token (committed first, as a lock's token is); a set across several slots
    /// has one token per group: [`SetGuard::tokens`].
    pub async fn token(&self) -> Result<u64, Error> {
        if self.lost {
            return Err(self.lost_error());
        }
        match self.groups.as_slice() {
            [one] => one.token().await,
            groups => Err(Error::InvalidArgument(format!(
                "a set across {} slots has one token per slot group: use tokens()",
                groups.len()
            ))),
        }
    }

    /// Each resource's token, in the order given: its group's (each committed first). Tokens of
    /// different groups come from different masters and are not comparable; each fences its own
    /// resources. A commit that fails makes the set lost ([`Error::LockLost`]).
    pub async fn tokens(&self) -> Result<Vec<u64>, Error> {
        if self.lost {
            return Err(self.lost_error());
        }
        let mut per_group = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            per_group.push(group.token().await?);
        }
        Ok(self.group_of.iter().map(|&g| per_group[g]).collect())
    }

    /// True once any group's lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.lost || self.groups.iter().any(LockGuard::is_lost)
    }

    /// Extends every group. A group lost ([`Error::LockLost`]) loses the set: the other groups
    /// are given back and that error returned; an extension not confirmed (no quorum) leaves the
    /// set as a lock's would be left (held until its validity ends).
    pub async fn extend(&mut self, ttl: Duration) -> Result<(), Error> {
        if self.lost {
            return Err(self.lost_error());
        }
        for i in 0..self.groups.len() {
            match self.groups[i].extend(ttl).await {
                Ok(()) => {}
                Err(error @ Error::LockLost { .. }) => {
                    self.lost = true;
                    let groups = std::mem::take(&mut self.groups);
                    join_all(groups.into_iter().map(LockGuard::release)).await;
                    return Err(error);
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    fn lost_error(&self) -> Error {
        Error::LockLost {
            resource: self.names.join("+"),
        }
    }

    /// A watchdog per group (each keeps its group extended and signals its loss).
    pub fn watchdogs(&self, ttl: Duration) -> Vec<Watchdog> {
        self.groups.iter().map(|g| g.watchdog(ttl)).collect()
    }

    /// The guards of the groups, in slot order: a set of one group is one [`LockGuard`], with
    /// everything a lock offers (`with_lock`-style work, guarded writes, `detach`).
    pub fn into_guards(self) -> Vec<LockGuard> {
        self.groups
    }

    /// Releases every group (all at once); the first error, if any.
    pub async fn release(self) -> Result<(), Error> {
        let released = join_all(self.groups.into_iter().map(LockGuard::release)).await;
        released.into_iter().collect()
    }
}

impl std::fmt::Debug for SetGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetGuard")
            .field("resources", &self.names)
            .field("groups", &self.groups)
            .finish()
    }
}
