//! What can go wrong, in terms a caller can act on.

use std::fmt;
use std::time::Duration;

/// Why one node did not count towards a quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    /// The node's URL, its password hidden.
    pub node: String,
    /// What went wrong there and, when it is likely, what to do about it
    /// (`connection refused: is the server running, and is the port right?`).
    pub reason: String,
    /// The call got no reply within its time (as opposed to a refused connection, a broken one
    /// or an error reply): for a server-side wait, that is also how the end of a wait the
    /// server answered late looks (`attempt::classify` tells the two apart).
    pub(crate) no_reply: bool,
    /// A refusal in the connection's setup that waiting cannot cure (conformance/README.md):
    /// the node is not connected to again within the call that met it.
    pub(crate) incurable: Option<Incurable>,
}

/// What a refusal waiting cannot cure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Incurable {
    /// Credentials or a permission refused (`NOAUTH`, `WRONGPASS`, `NOPERM`): a node failure.
    Refused,
    /// A database the server does not have: the caller's invalid argument.
    NoDatabase,
}

impl NodeFailure {
    pub(crate) fn new(node: impl Into<String>, reason: impl Into<String>) -> NodeFailure {
        NodeFailure {
            node: node.into(),
            reason: reason.into(),
            no_reply: false,
            incurable: None,
        }
    }

    /// The same failure, marked as one waiting cannot cure.
    pub(crate) fn incurable(self, incurable: Option<Incurable>) -> NodeFailure {
        NodeFailure { incurable, ..self }
    }

    /// No reply from `node` within `timeout`.
    pub(crate) fn no_reply(node: impl Into<String>, timeout: Duration) -> NodeFailure {
        NodeFailure {
            no_reply: true,
            ..NodeFailure::new(node, format!("timed out after {timeout:?}"))
        }
    }
}

/// Everything a lock call can fail with. `Display` is one line in the words every dlock client
/// uses (conformance/errors.json): which lock or node, what failed, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Held by another owner on a majority until the wait ran out.
    Contended {
        /// The resource's name.
        resource: String,
        /// Attempts made (in queue mode usually 1: the wait happens on the nodes).
        attempts: u32,
    },
    /// Fewer than a quorum answered usefully: which nodes failed and why.
    NoQuorum {
        /// The resource's name.
        resource: String,
        /// Nodes that had to grant (a majority, or a semaphore's larger quorum).
        needed: usize,
        /// Each node that failed, and why.
        failures: Vec<NodeFailure>,
    },
    /// A majority granted, but the time spent left no validity (slow nodes, tiny TTL).
    ValidityExpired {
        /// The resource's name.
        resource: String,
    },
    /// The lock is no longer held on a majority (extension failed or validity ran out).
    LockLost {
        /// The resource's name.
        resource: String,
    },
    /// Bad arguments, refused before any node is asked: no nodes or one given twice, a bad URL,
    /// an empty resource name, a TTL outside 1 ms to a day or too short to leave validity after
    /// the drift allowance, a wait beyond ten years, a semaphore limit out of range; or refused
    /// by a node all the same (`ERR ... must be ...`), which ends the call at once. The text
    /// says which and why.
    InvalidArgument(String),
    /// The resource is held as another kind (a semaphore of another limit, a lock asked as a
    /// semaphore, ...): never retried.
    WrongKind {
        /// The resource's name.
        resource: String,
        /// The node that said so.
        node: String,
        /// The node's `WRONGKIND` message.
        message: String,
    },
    /// A guarded write was refused: a newer holder already wrote through `gate` with a larger
    /// token. Nothing changed, and the lock is marked lost.
    Stale {
        /// The resource's name.
        resource: String,
        /// The gate's key.
        gate: String,
        /// This lock's token, below the gate's.
        token: u64,
    },
    /// A guarded write's server answered another error (the wrapped command's own, an ACL
    /// refusal, no module there) or could not be reached.
    Guarded {
        /// The resource's name.
        resource: String,
        /// The gate's key.
        gate: String,
        /// What the server (or the connection) said.
        message: String,
    },
}

/// A node's reply that the resource is held as another kind.
pub(crate) fn is_wrong_kind(failure: &NodeFailure) -> bool {
    failure.reason.contains("WRONGKIND")
}

/// A node's error reply refusing an argument of the request: `ERR <argument> must be <what it
/// takes>`, as every argument check of the module words it (src/wire/errors.rs). Unlike a
/// node's failure (unreachable, loading, no module), asking again cannot change it.
pub(crate) fn is_refused_argument(failure: &NodeFailure) -> bool {
    failure.reason.starts_with("ERR ") && failure.reason.contains(" must be ")
}

/// What a node's refusal of an argument becomes: the caller's bad argument, naming the node.
pub(crate) fn refused_argument(resource: &str, failure: NodeFailure) -> Error {
    if failure.incurable == Some(Incurable::NoDatabase) {
        let NodeFailure { node, reason, .. } = failure;
        return Error::InvalidArgument(format!("lock {resource:?}: {node}: {reason}"));
    }
    Error::InvalidArgument(format!(
        "lock {resource:?}: {} refused an argument: {}",
        failure.node, failure.reason
    ))
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

/// `n` and its noun, singular or plural: `1 attempt`, `3 attempts`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `no quorum for "r": 2 nodes needed, 2 failed: <node>: <reason>; ...`
fn no_quorum(
    f: &mut fmt::Formatter<'_>,
    resource: &str,
    needed: usize,
    failures: &[NodeFailure],
) -> fmt::Result {
    let needed = count(needed, "node");
    write!(
        f,
        "no quorum for {resource:?}: {needed} needed, {} failed",
        failures.len()
    )?;
    let list: Vec<String> = failures
        .iter()
        .map(|n| format!("{}: {}", n.node, n.reason))
        .collect();
    if !list.is_empty() {
        write!(f, ": {}", list.join("; "))?;
    }
    Ok(())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Contended { resource, attempts } => write!(
                f,
                "lock {resource:?} is held by another owner ({})",
                count(*attempts as usize, "attempt")
            ),
            Error::NoQuorum {
                resource,
                needed,
                failures,
            } => no_quorum(f, resource, *needed, failures),
            Error::ValidityExpired { resource } => write!(
                f,
                "lock {resource:?} was granted, but its validity ran out while acquiring: give a longer TTL"
            ),
            Error::LockLost { resource } => {
                write!(
                    f,
                    "lock {resource:?} was lost (no longer held on a majority): stop using its token"
                )
            }
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::WrongKind {
                resource,
                node,
                message,
            } => {
                write!(f, "lock {resource:?} is held as another kind on {node}: {message}")
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
