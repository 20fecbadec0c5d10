//! What a lock request takes: the exclusive lock (the default), a shared hold of a read/write
//! lock, or one permit of a semaphore. The kind decides the ACQUIRE's option and how many nodes
//! make it held (docs/protocol.md, shared locks and semaphores).

use crate::errors::Error;
use crate::timing::{quorum, semaphore_quorum};

/// Largest semaphore limit the module accepts.
pub const MAX_LIMIT: u32 = 10_000;

/// How a resource is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LockKind {
    /// One holder at a time (a writer): what `lock` and `try_lock` take for a plain `&str`.
    #[default]
    Exclusive,
    /// Any number of shared holders at once, none while someone holds it exclusively.
    Shared,
    /// At most `limit` holders at once (1 to [`MAX_LIMIT`]).
    Semaphore {
        /// How many holders at once.
        limit: u32,
    },
}

impl LockKind {
    /// Nodes that must grant (and commit) for the lock to be held on `nodes` nodes: a majority
    /// for exclusive and shared holds (any reader majority meets any writer majority); for a
    /// semaphore of limit k, more than N·k/(k+1), so that k+1 holders can never each gather a
    /// quorum without some node admitting k+1 of them.
    pub fn quorum(self, nodes: usize) -> usize {
        match self {
            LockKind::Exclusive | LockKind::Shared => quorum(nodes),
            LockKind::Semaphore { limit } => semaphore_quorum(nodes, limit),
        }
    }

    /// Refuses a limit the module would refuse, before any node is asked.
    pub fn check(self) -> Result<Self, Error> {
        match self {
            LockKind::Semaphore { limit } if !(1..=MAX_LIMIT).contains(&limit) => {
                Err(Error::InvalidArgument(format!(
                    "a semaphore's limit must be from 1 to {MAX_LIMIT}, got {limit}"
                )))
            }
            kind => Ok(kind),
        }
    }
}

/// A resource and how to hold it. A `&str` is the exclusive lock of that name; build the others
/// with [`Resource::shared`] and [`Resource::semaphore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource<'a> {
    /// The resource's name: the key the lock lives under on every node.
    pub name: &'a str,
    /// How to hold it.
    pub kind: LockKind,
}

impl<'a> Resource<'a> {
    /// The exclusive lock `name` (what a plain `&str` means).
    pub fn exclusive(name: &'a str) -> Self {
        Resource {
            name,
            kind: LockKind::Exclusive,
        }
    }

    /// A shared (reader's) hold of the read/write lock `name`.
    pub fn shared(name: &'a str) -> Self {
        Resource {
            name,
            kind: LockKind::Shared,
        }
    }

    /// One of `limit` permits of the semaphore `name` (checked when the lock is asked for).
    pub fn semaphore(name: &'a str, limit: u32) -> Self {
        Resource {
            name,
            kind: LockKind::Semaphore { limit },
        }
    }
}

impl<'a> From<&'a str> for Resource<'a> {
    fn from(name: &'a str) -> Self {
        Resource::exclusive(name)
    }
}

impl<'a> From<&'a String> for Resource<'a> {
    fn from(name: &'a String) -> Self {
        Resource::exclusive(name)
    }
}

/// Most resources one set may name (the module's bound: the fairness rule idles at most this
/// many keys minus one while a set waits).
pub const MAX_SET: usize = 16;

/// Several resources of the same nodes taken at once, all or nothing, under one lease and one
/// token (docs/multi.md): each exclusive, or shared where [`LockSet::shared`] says so. On a
/// Redis Cluster node its keys must share a slot (a hash tag: `{acct}:1`, `{acct}:2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockSet {
    names: Vec<String>,
    shared: Vec<bool>,
}

impl LockSet {
    /// The set of `names`, each exclusive: 1 to [`MAX_SET`] names, none twice.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Result<LockSet, Error> {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let refused = |why: String| Err(Error::InvalidArgument(why));
        if names.is_empty() || names.len() > MAX_SET {
            return refused(format!(
                "a set names 1 to {MAX_SET} resources, got {}",
                names.len()
            ));
        }
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return refused(format!(
                    "resource {name:?} is given twice: a set names each once"
                ));
            }
        }
        let shared = vec![false; names.len()];
        Ok(LockSet { names, shared })
    }

    /// The same set with `name` held shared (a reader's hold) instead of exclusive.
    pub fn shared(mut self, name: &str) -> Result<LockSet, Error> {
        match self.names.iter().position(|n| n == name) {
            Some(i) => {
                self.shared[i] = true;
                Ok(self)
            }
            None => Err(Error::InvalidArgument(format!(
                "resource {name:?} is not in the set"
            ))),
        }
    }

    /// The names, in the order given (the order every node is sent them in).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One letter per name, `x` exclusive or `s` shared; `None` when all are exclusive.
    pub fn modes(&self) -> Option<String> {
        let letters = self.shared.iter().map(|&s| if s { 's' } else { 'x' });
        self.shared.contains(&true).then(|| letters.collect())
    }

    /// The part of the set naming `names` (each kept in its mode), in the order of `names`.
    pub(crate) fn part(&self, names: &[String]) -> LockSet {
        let shared = names
            .iter()
            .map(|n| {
                self.names
                    .iter()
                    .position(|m| m == n)
                    .is_some_and(|i| self.shared[i])
            })
            .collect();
        LockSet {
            names: names.to_vec(),
            shared,
        }
    }

    /// How errors and the guard name the set: its names joined by `+`.
    pub fn label(&self) -> String {
        self.names.join("+")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quorum_follows_the_kind() {
        assert_eq!(LockKind::Exclusive.quorum(5), 3);
        assert_eq!(LockKind::Shared.quorum(5), 3);
        assert_eq!(LockKind::Semaphore { limit: 2 }.quorum(5), 4);
        assert_eq!(LockKind::Semaphore { limit: 2 }.quorum(3), 3);
        assert_eq!(LockKind::Semaphore { limit: 1 }.quorum(3), 2);
    }

    #[test]
    fn a_limit_out_of_range_is_refused_before_any_node() {
        for limit in [0, MAX_LIMIT + 1] {
            let refused = LockKind::Semaphore { limit }.check();
            assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{limit}");
        }
        assert!(LockKind::Semaphore { limit: MAX_LIMIT }.check().is_ok());
    }
}
