//! What can go wrong, in terms a caller can act on.

use std::fmt;
use std::time::Duration;

/// Why one node did not count towards a quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    pub node: String,
    pub reason: String,
    /// The call got no reply within its time (as opposed to a refused connection, a broken one
    /// or an error reply): for a server-side wait, that is also how the end of a wait the
    /// server answered late looks (`attempt::classify` tells the two apart).
    pub(crate) no_reply: bool,
}

impl NodeFailure {
    pub(crate) fn new(node: impl Into<String>, reason: impl Into<String>) -> NodeFailure {
        NodeFailure {
            node: node.into(),
            reason: reason.into(),
            no_reply: false,
        }
    }

    /// No reply from `node` within `timeout`.
    pub(crate) fn no_reply(node: impl Into<String>, timeout: Duration) -> NodeFailure {
        NodeFailure {
            no_reply: true,
            ..NodeFailure::new(node, format!("timed out after {timeout:?}"))
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Held by another owner on a majority until the wait ran out.
    Contended { resource: String, attempts: u32 },
    /// Fewer than a majority answered usefully: which nodes failed and why.
    NoQuorum {
        resource: String,
        needed: usize,
        failures: Vec<NodeFailure>,
    },
    /// A majority granted, but the time spent left no validity (slow nodes, tiny TTL).
    ValidityExpired { resource: String },
    /// The lock is no longer held on a majority (extension failed or validity ran out).
    LockLost { resource: String },
    /// Bad arguments: no nodes, bad URL, zero TTL, a semaphore limit out of range.
    InvalidArgument(String),
    /// The resource is held as another kind (a semaphore of another limit, a lock asked as a
    /// semaphore, ...): the node's `WRONGKIND` message. Never retried.
    WrongKind { resource: String, message: String },
    /// A guarded write was refused: a newer holder already wrote through `gate` with a larger
    /// token. Nothing changed, and the lock is marked lost.
    Stale {
        resource: String,
        gate: String,
        token: u64,
    },
    /// A guarded write's server answered another error (the wrapped command's own, an ACL
    /// refusal, no module there) or could not be reached.
    Guarded {
        resource: String,
        gate: String,
        message: String,
    },
}

/// A node's reply that the resource is held as another kind.
pub(crate) fn is_wrong_kind(failure: &NodeFailure) -> bool {
    failure.reason.contains("WRONGKIND")
}

impl Error {
    /// True when the resource was simply busy (as opposed to nodes being unreachable).
    pub fn is_contended(&self) -> bool {
        matches!(self, Error::Contended { .. })
    }

    /// True when the lock is known lost: an extension failed, or a guarded write was STALE.
    pub fn is_lost(&self) -> bool {
        matches!(self, Error::LockLost { .. } | Error::Stale { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Contended { resource, attempts } => write!(
                f,
                "lock {resource:?} is held by another owner ({attempts} attempts)"
            ),
            Error::NoQuorum {
                resource,
                needed,
                failures,
            } => {
                write!(f, "no quorum for {resource:?} (needed {needed} nodes); ")?;
                let list: Vec<String> = failures
                    .iter()
                    .map(|n| format!("{}: {}", n.node, n.reason))
                    .collect();
                write!(f, "failed: {}", list.join(", "))
            }
            Error::ValidityExpired { resource } => write!(
                f,
                "lock {resource:?} was granted but its validity ran out during acquisition"
            ),
            Error::LockLost { resource } => {
                write!(
                    f,
                    "lock {resource:?} was lost (no longer held on a majority)"
                )
            }
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::WrongKind { resource, message } => {
                write!(f, "lock {resource:?} cannot be taken as asked: {message}")
            }
            Error::Stale {
                resource,
                gate,
                token,
            } => write!(
                f,
                "lock {resource:?} was lost: gate {gate:?} has seen a newer token than {token}; \
                 nothing was written"
            ),
            Error::Guarded {
                resource,
                gate,
                message,
            } => write!(
                f,
                "guarded write under lock {resource:?} through gate {gate:?} failed: {message}"
            ),
        }
    }
}

impl std::error::Error for Error {}
