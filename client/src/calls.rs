//! The calls to the nodes about one lock, the one set every path uses: an attempt's asks and
//! commits (driver.rs), a guard's extensions, renewal and release (lock.rs), the by-owner
//! commands and status (admin.rs). Each goes through the transport within the per-node timeout,
//! and each reply is read here into what the caller decides on: a [`Reply`] to an ask, a
//! commit's yes or no, a [`Tally`] of a request sent everywhere.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use redis::Value;

use crate::attempt::{AttemptError, Reply};
use crate::backend::Backend;
use crate::commands::{ms, Request, SetOp};
use crate::errors::{refused_argument, Error, NodeFailure};
use crate::kind::{LockKind, LockSet, Resource};
use crate::timing::{validity, whole_ms};

/// One lock's calls. Cheap to clone (into the futures of requests left running).
#[derive(Clone)]
pub struct Calls {
    backend: Arc<Backend>,
    resource: Arc<str>,
    kind: LockKind,
    /// A set's members: then every call is the set's command (one answer for all of them).
    set: Option<Arc<LockSet>>,
}

impl Calls {
    pub fn new(backend: Arc<Backend>, resource: &str, kind: LockKind) -> Calls {
        Calls {
            backend,
            resource: resource.into(),
            kind,
            set: None,
        }
    }

    /// The calls of a set (docs/multi.md): each node answers for all its members at once, so
    /// the set is one lock to the quorum (the exclusive kind's, whatever its members' modes).
    pub fn for_set(backend: Arc<Backend>, set: Arc<LockSet>) -> Calls {
        Calls {
            backend,
            resource: set.label().into(),
            kind: LockKind::Exclusive,
            set: Some(set),
        }
    }

    /// The request for `op` when these are a set's calls, else `one`.
    fn either<'a>(&'a self, owner: &'a str, op: SetOp, one: Request<'a>) -> Request<'a> {
        match &self.set {
            Some(set) => Request::Set { set, owner, op },
            None => one,
        }
    }

    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }

    pub fn resource(&self) -> &str {
        &self.resource
    }

    pub fn kind(&self) -> LockKind {
        self.kind
    }

    fn everywhere(&self) -> Vec<usize> {
        (0..self.backend.nodes()).collect()
    }

    pub async fn call(&self, node: usize, request: Request<'_>) -> Result<Value, NodeFailure> {
        let timeout = self.backend.opts.rounds.timeout;
        self.backend.transport.call(node, request, timeout).await
    }

    /// `DLOCK.ACQUIRE` as `owner` for `ttl`; with `wait` (the time left, the ticket) a
    /// server-side wait (`WAIT`, `TICKET`).
    pub async fn ask(
        &self,
        node: usize,
        owner: &str,
        ttl: Duration,
        wait: Option<(Duration, Option<u64>)>,
    ) -> Reply {
        let (resource, ttl_ms, kind) = (&*self.resource, ms(ttl), self.kind);
        let request = match wait {
            Some((left, ticket)) => Request::Wait {
                resource,
                owner,
                ttl_ms,
                timeout_ms: ms(left),
                ticket,
                kind,
            },
            None => Request::Acquire {
                resource,
                owner,
                ttl_ms,
                kind,
            },
        };
        let op = SetOp::Acquire {
            ttl_ms,
            wait: wait.map(|(left, ticket)| (ms(left), ticket)),
        };
        let request = self.either(owner, op, request);
        match self.call(node, request).await {
            Ok(Value::Int(token)) if token > 0 => Reply::Granted(token as u64),
            Ok(Value::Nil) => Reply::Nil,
            Ok(other) => Reply::Failed(self.unexpected(node, &other)),
            Err(failure) => Reply::Failed(failure),
        }
    }

    /// `DLOCK.FENCE` of `token` as `owner`, with `PX ttl` when the commit starts the lease:
    /// committed, or why not.
    pub async fn fence(
        &self,
        node: usize,
        owner: &str,
        token: u64,
        ttl: Option<Duration>,
    ) -> Result<(), NodeFailure> {
        let request = Request::Fence {
            resource: &self.resource,
            owner,
            token,
            ttl_ms: ttl.map(ms),
        };
        let op = SetOp::Fence {
            token,
            ttl_ms: ttl.map(ms),
        };
        match self.call(node, self.either(owner, op, request)).await? {
            Value::Int(1) => Ok(()),
            _ => Err(self.named(node, "fence refused: lock no longer held")),
        }
    }

    /// `DLOCK.EXTEND` on one node (the renewal of a lock held on one node): whether it did.
    pub async fn renew(&self, node: usize, owner: &str, ttl: Duration) -> bool {
        let request = Request::Extend {
            resource: &self.resource,
            owner,
            ttl_ms: ms(ttl),
        };
        let request = self.either(owner, SetOp::Extend { ttl_ms: ms(ttl) }, request);
        matches!(self.call(node, request).await, Ok(Value::Int(1)))
    }

    /// Sends a request answering 1 (done) or 0 (refused) to `nodes` in parallel.
    async fn tally(&self, request: Request<'_>, nodes: &[usize]) -> Tally {
        let replies = join_all(nodes.iter().map(|&n| self.call(n, request))).await;
        let mut tally = Tally::default();
        for reply in replies {
            match reply {
                // 1 (RELEASEALL: how many members it held, at least 1) is done.
                Ok(Value::Int(n)) if n >= 1 => tally.done += 1,
                Ok(_) => tally.refused += 1,
                Err(failure) => tally.unreachable.push(failure),
            }
        }
        tally
    }

    /// `DLOCK.RELEASE` of `owner` on `nodes`: frees its grants and withdraws its waits.
    pub async fn release_on(&self, owner: &str, nodes: &[usize]) -> Tally {
        let request = Request::Release {
            resource: &self.resource,
            owner,
        };
        self.tally(self.either(owner, SetOp::Release, request), nodes)
            .await
    }

    /// `DLOCK.RELEASE` of `owner` on every node (a grant whose reply was lost is still a grant).
    pub async fn release(&self, owner: &str) -> Tally {
        self.release_on(owner, &self.everywhere()).await
    }

    /// `DLOCK.EXTEND` of `owner` on every node: the new deadline if the kind's quorum extended
    /// within the new validity, else what each node said.
    pub async fn extend(&self, owner: &str, ttl: Duration) -> Result<Instant, Tally> {
        let ttl = whole_ms(ttl);
        let clock = &self.backend.clock;
        let started = clock.now();
        let request = Request::Extend {
            resource: &self.resource,
            owner,
            ttl_ms: ms(ttl),
        };
        let request = self.either(owner, SetOp::Extend { ttl_ms: ms(ttl) }, request);
        let tally = self.tally(request, &self.everywhere()).await;
        let now = clock.now();
        let needed = self.kind.quorum(self.backend.nodes());
        match validity(ttl, started, now, &self.backend.opts.rounds.drift) {
            Some(left) if tally.done >= needed => Ok(now + left),
            _ => Err(tally),
        }
    }

    /// `DLOCK.PROCLAIM` on every node: `owner`'s lock with `token` held as `new_owner`.
    pub async fn proclaim(&self, owner: &str, token: u64, new_owner: &str) -> Tally {
        let request = Request::Proclaim {
            resource: &self.resource,
            owner,
            token,
            new_owner,
        };
        self.tally(request, &self.everywhere()).await
    }

    /// `DLOCK.STATUS` on every node.
    pub async fn status(&self) -> Vec<Result<Value, NodeFailure>> {
        let request = Request::Status {
            resource: &self.resource,
        };
        join_all(self.everywhere().into_iter().map(|n| self.call(n, request))).await
    }

    fn named(&self, node: usize, reason: &str) -> NodeFailure {
        NodeFailure::new(self.backend.transport.name(node), reason)
    }

    fn unexpected(&self, node: usize, reply: &Value) -> NodeFailure {
        self.named(node, &format!("unexpected reply {reply:?}"))
    }
}

/// What a request sent to several nodes (RELEASE, EXTEND) found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub done: usize,
    pub refused: usize,
    pub unreachable: Vec<NodeFailure>,
}

impl Tally {
    /// Nodes that gave an answer, yes or no.
    pub fn answered(&self) -> usize {
        self.done + self.refused
    }

    /// Too few nodes answered for a quorum (`needed`) to be possible: say which and why.
    pub fn no_quorum(self, resource: &str, needed: usize) -> Error {
        Error::NoQuorum {
            resource: resource.to_string(),
            needed,
            failures: self.unreachable,
        }
    }

    /// A failed extension: `NoQuorum` when too few nodes answered to tell, otherwise the lock is
    /// no longer held (or not long enough) on a quorum: `LockLost`.
    pub fn extend_error(self, resource: &str, needed: usize) -> Error {
        if self.answered() < needed {
            return self.no_quorum(resource, needed);
        }
        Error::LockLost {
            resource: resource.to_string(),
        }
    }
}

/// Why an acquisition failed, as the caller's [`Error`]: a quorum short of `target`'s kind on
/// `nodes` nodes, contention after `attempts` attempts, a kind refused by a node, no validity.
pub(crate) fn attempt_error(
    target: Resource<'_>,
    failure: AttemptError,
    attempts: u32,
    nodes: usize,
) -> Error {
    let resource = target.name.to_string();
    match failure {
        AttemptError::Contended => Error::Contended { resource, attempts },
        AttemptError::WrongKind(failure) => Error::WrongKind {
            resource,
            node: failure.node,
            message: failure.reason,
        },
        AttemptError::NoQuorum(failures) => Error::NoQuorum {
            resource,
            needed: target.kind.quorum(nodes),
            failures,
        },
        AttemptError::Invalid(failure) => refused_argument(&resource, failure),
        AttemptError::ValidityExpired => Error::ValidityExpired { resource },
    }
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
