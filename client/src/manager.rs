//! [`LockManager`]: the entry point. Holds the nodes and options; acquires locks; every other
//! call a manager offers (by owner name, what operators watch, election) is a method here that
//! hands the work to its concern's module (admin.rs, observe.rs, election.rs, election_watch.rs),
//! so the manager sits above them all, as in every client (docs/internals/file-map.md).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::admin::{self, NodeStatus};
use crate::attempt::Policy;
use crate::backend::Backend;
use crate::calls::{attempt_error, Calls};
use crate::checks::{check_lease, check_name, check_wait};
use crate::driver::Acquire;
use crate::election::{self, Leader, Leadership};
use crate::election_watch::{self, Observer};
use crate::errors::Error;
use crate::kind::{LockKind, LockSet, Resource};
use crate::lock::{LockContext, LockGuard, Watchdog};
use crate::observe::{self, NodeView, QueueState, Top};
use crate::options::Options;
use crate::probe::WaitProbe;
use crate::set_guard::SetGuard;
use crate::transport::slots::set_groups;
use crate::transport::Transport;

/// Redlock across N independent masters running the dlock module. Cheap to clone.
#[derive(Clone)]
pub struct LockManager {
    pub(crate) backend: Arc<Backend>,
}

impl LockManager {
    /// A manager over any transport (the unit tests' scripted one, say).
    pub(crate) fn with_transport(
        transport: Box<dyn Transport>,
        opts: Options,
        clock: Box<dyn crate::timing::Clock>,
    ) -> LockManager {
        LockManager {
            backend: Arc::new(Backend::new(transport, opts, clock)),
        }
    }

    /// The per-node call timeout.
    pub fn timeout(&self) -> Duration {
        self.backend.opts.rounds.timeout
    }

    /// Waits, at most `within`, for what this manager left running after its calls answered:
    /// the RELEASEs of withdrawn waits, of rounds that failed, of dropped guards. A process that
    /// exits right after a call (a CLI) settles first, or those RELEASEs never leave and the
    /// locks stay until their TTL. True when everything finished.
    pub async fn settle(&self, within: Duration) -> bool {
        let background = &self.backend.background;
        background.close();
        let finished = tokio::time::timeout(within, background.wait())
            .await
            .is_ok();
        background.reopen();
        finished
    }

    /// The nodes' URLs, passwords hidden, in the order given: how errors and status name them.
    pub fn node_urls(&self) -> Vec<String> {
        let t = &self.backend.transport;
        (0..t.nodes()).map(|i| t.name(i).to_string()).collect()
    }

    /// One attempt that does not wait on the nodes, with a fresh owner. `resource` is a name
    /// (the exclusive lock) or a [`Resource`] naming a shared hold or a semaphore's permit.
    pub async fn try_lock<'r>(
        &self,
        resource: impl Into<Resource<'r>>,
        ttl: Duration,
    ) -> Result<LockGuard, Error> {
        let resource = checked(resource.into(), ttl, &self.backend.opts.rounds.drift)?;
        let now = self.backend.clock.now();
        self.take(resource, (ttl, now), self.no_wait(), None, true)
            .await
    }

    /// Waits up to `wait` for the lock: queued on the nodes in ticket order by default, or by
    /// retrying with delay + jitter ([`WaitMode`]).
    pub async fn lock<'r>(
        &self,
        resource: impl Into<Resource<'r>>,
        ttl: Duration,
        wait: Duration,
    ) -> Result<LockGuard, Error> {
        self.lock_probed(resource, ttl, wait, &WaitProbe::new())
            .await
    }

    /// [`LockManager::lock`], telling `probe` which owner it waits as, round by round.
    pub async fn lock_probed<'r>(
        &self,
        resource: impl Into<Resource<'r>>,
        ttl: Duration,
        wait: Duration,
        probe: &WaitProbe,
    ) -> Result<LockGuard, Error> {
        let resource = checked(resource.into(), ttl, &self.backend.opts.rounds.drift)?;
        check_wait(wait)?;
        let deadline = self.backend.clock.now() + wait;
        let policy = self.waiting_policy();
        // One server-side wait per exclusive resource (local_waits.rs); the time out, one try at
        // the end. Shared holds and permits wait on the nodes each: they are granted together.
        let exclusive = resource.kind == LockKind::Exclusive;
        let _turn = match policy {
            Policy::Queue if exclusive => match self.backend.local_waits.turn(resource.name, wait).await {
                Some(turn) => Some(turn),
                None => {
                    return self
                        .take(resource, (ttl, deadline), self.no_wait(), None, true)
                        .await
                }
            },
            _ => None,
        };
        let probe = Some(probe.clone());
        self.take(resource, (ttl, deadline), policy, probe, false)
            .await
    }

    /// Several resources at once, all or nothing (docs/multi.md): one attempt that does not
    /// wait on the nodes. The guard holds every member under one lease and one token (on a
    /// Redis Cluster node, a set across slots: one per slot group); a member lost on the nodes
    /// loses the whole set.
    pub async fn try_lock_all(&self, set: &LockSet, ttl: Duration) -> Result<SetGuard, Error> {
        let now = self.backend.clock.now();
        self.take_set(set, (ttl, now), self.no_wait(), true).await
    }

    /// Waits up to `wait` for every member of `set` at once, holding none of them while it
    /// waits: queued on every member in the node's one order (or retrying, [`WaitMode`]). A
    /// cross-slot set on a Cluster waits for each slot group in turn, the groups held kept
    /// extended meanwhile.
    pub async fn lock_all(
        &self,
        set: &LockSet,
        ttl: Duration,
        wait: Duration,
    ) -> Result<SetGuard, Error> {
        check_wait(wait)?;
        let deadline = self.backend.clock.now() + wait;
        self.take_set(set, (ttl, deadline), self.waiting_policy(), false)
            .await
    }

    /// The set's slot groups taken in order (one group outside a Cluster), each a set of its
    /// own; a group that fails gives back the groups held.
    async fn take_set(
        &self,
        set: &LockSet,
        times: (Duration, Instant),
        policy: Policy,
        once: bool,
    ) -> Result<SetGuard, Error> {
        set.names().iter().try_for_each(|name| check_name(name))?;
        check_lease(times.0, &self.backend.opts.rounds.drift)?;
        let groups = match self.backend.transport.is_cluster() {
            true => set_groups(set.names()),
            false => vec![set.names().to_vec()],
        };
        let mut held: Vec<(LockGuard, Option<Watchdog>)> = Vec::with_capacity(groups.len());
        for (i, group) in groups.iter().enumerate() {
            let part = set.part(group);
            match self.take_group(&part, times, policy, once).await {
                // Kept extended while the next groups are waited for (hold-and-wait).
                Ok(guard) if i + 1 < groups.len() => {
                    let dog = guard.watchdog(times.0);
                    held.push((guard, Some(dog)));
                }
                Ok(guard) => held.push((guard, None)),
                Err(error) => return Err(give_back(held, error).await),
            }
        }
        let mut guards = Vec::with_capacity(held.len());
        for (guard, dog) in held {
            if let Some(dog) = dog {
                dog.stop().await;
            }
            guards.push(guard);
        }
        let group_of = set
            .names()
            .iter()
            .map(|n| groups.iter().position(|g| g.contains(n)).unwrap_or(0))
            .collect();
        Ok(SetGuard::new(set.names().to_vec(), group_of, guards))
    }

    async fn take_group(
        &self,
        part: &LockSet,
        times: (Duration, Instant),
        policy: Policy,
        once: bool,
    ) -> Result<LockGuard, Error> {
        let calls = Calls::for_set(self.backend.clone(), Arc::new(part.clone()));
        let label = part.label();
        let acquire = Acquire::new(calls, times, policy, None);
        self.run(Resource::exclusive(&label), acquire, once).await
    }

    /// How a call that waits waits: queued on the nodes, or retrying ([`WaitMode`]).
    pub(crate) fn waiting_policy(&self) -> Policy {
        if self.backend.queues() {
            Policy::Queue
        } else {
            self.no_wait()
        }
    }

    /// Attempts without a server wait hold on their grants: no ticket can wound a plain grant,
    /// so exclusion needs no commit, and the token's commit waits until the token is read
    /// (commit.rs; docs/protocol.md §4.1).
    fn no_wait(&self) -> Policy {
        Policy::NoWait { commit: false }
    }

    /// Runs the attempts (one when `once`) and hands out the lock, or says why not.
    async fn take(
        &self,
        resource: Resource<'_>,
        times: (Duration, Instant),
        policy: Policy,
        probe: Option<WaitProbe>,
        once: bool,
    ) -> Result<LockGuard, Error> {
        let calls = Calls::new(self.backend.clone(), resource.name, resource.kind);
        self.run(resource, Acquire::new(calls, times, policy, probe), once)
            .await
    }

    /// Runs an acquisition's attempts (one when `once`) and hands out the lock, or says why not.
    pub(crate) async fn run(
        &self,
        resource: Resource<'_>,
        acquire: Arc<Acquire>,
        once: bool,
    ) -> Result<LockGuard, Error> {
        let refused = || self.backend.transport.refusal().map(Error::InvalidArgument);
        if let Some(error) = refused() {
            return Err(error); // two nodes reach one server: nothing is asked
        }
        let outcome = acquire.run(once).await;
        if outcome.is_ok() {
            let transport = &self.backend.transport;
            transport.meet_all(self.backend.call_bound()).await; // the first call only
        }
        // Found during this call (a connection opened by it): whatever the nodes said, the
        // quorum was not one of distinct servers, and a lock won is given back.
        if let Some(error) = refused() {
            if let Ok(won) = outcome {
                won.released.cancel();
                acquire.calls().release(&won.owner).await;
            }
            return Err(error);
        }
        match outcome {
            Ok(won) => {
                let calls = acquire.calls().clone();
                let guard = LockGuard::new(calls, &won.owner, won.granted);
                Ok(guard.signalling(won.released))
            }
            Err((failure, attempts)) => {
                let nodes = self.backend.nodes();
                Err(attempt_error(resource, failure, attempts, nodes))
            }
        }
    }

    /// Runs `work` while a watchdog keeps the lock extended, then releases it. `work` sees
    /// [`LockContext::lost`] fire as soon as an extension misses a majority or validity runs
    /// out; `with_lock` then returns [`Error::LockLost`] instead of the work's output.
    pub async fn with_lock<'r, F, Fut, T>(
        &self,
        resource: impl Into<Resource<'r>>,
        ttl: Duration,
        wait: Duration,
        work: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        let resource = resource.into();
        let guard = self.lock(resource, ttl, wait).await?;
        let watchdog = guard.watchdog(ttl);
        let output = work(watchdog.context()).await;
        let lost = watchdog.stop().await;
        let _ = guard.release().await;
        if lost {
            Err(Error::LockLost {
                resource: resource.name.to_string(),
            })
        } else {
            Ok(output)
        }
    }
}

/// The calls by owner name (admin.rs), what operators watch (observe.rs) and election
/// (election.rs, election_watch.rs).
impl LockManager {
    /// Releases `owner`'s lock on all nodes. Ok(number of nodes that released it);
    /// [`Error::NoQuorum`] naming the unreachable nodes if fewer than a majority answered;
    /// [`Error::InvalidArgument`] for an empty name or an owner outside 1 to 256 bytes, before
    /// any node is asked.
    pub async fn release_owner(&self, resource: &str, owner: &str) -> Result<usize, Error> {
        admin::release_owner(&self.backend, resource, owner).await
    }

    /// Extends `owner`'s hold on all nodes; the new validity. [`Error::NoQuorum`] if too few
    /// nodes answered, [`Error::LockLost`] if the kind's quorum answered but did not extend (a
    /// semaphore's permit needs its larger quorum: pass it as a [`Resource::semaphore`]).
    pub async fn extend_owner<'r>(
        &self,
        resource: impl Into<Resource<'r>>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Duration, Error> {
        admin::extend_owner(&self.backend, resource.into(), owner, ttl).await
    }

    /// `DLOCK.STATUS` on every node; [`Error::InvalidArgument`] for an empty name, before any
    /// node is asked.
    pub async fn status(&self, resource: &str) -> Result<Vec<NodeStatus>, Error> {
        admin::status(&self.backend, resource).await
    }

    /// Every node's hot locks: keys with waiters and held locks (at most `rows` of each).
    /// `redis+cluster://` nodes are refused by name: DLOCK.TOP must go to each master, so list
    /// those as `redis://` URLs.
    pub async fn top(&self, rows: usize) -> Vec<NodeView<Top>> {
        observe::top(&self.backend, rows).await
    }

    /// Where `owner` stands in `resource`'s queue on every node, and who holds it there.
    pub async fn queue_state(&self, resource: &str, owner: &str) -> Vec<NodeView<QueueState>> {
        observe::queue_states(&self.backend, resource, owner).await
    }

    /// Queues (fairly, on the nodes) to lead `name` with `value` (an address, an id; at most
    /// [`election::MAX_VALUE_LEN`] bytes) and returns once elected, its leadership kept alive by
    /// a watchdog extending every `ttl / 3`. Waits as long as others lead; drop the future to
    /// stop campaigning. Fails on anything but contention (no quorum, bad arguments).
    pub async fn campaign(
        &self,
        name: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<Leadership, Error> {
        election::check(name, value)?;
        check_lease(ttl, &self.backend.opts.rounds.drift)?;
        loop {
            let calls = Calls::new(self.backend.clone(), name, LockKind::Exclusive);
            let deadline = self.backend.clock.now() + election::CAMPAIGN_ROUND;
            let policy = self.waiting_policy();
            let acquire = Acquire::labelled(calls, (ttl, deadline), policy, value);
            match self.run(Resource::exclusive(name), acquire, false).await {
                // The epoch leaves the client only committed: a commit that fails is
                // `Error::LockLost` (the hold given back as the guard drops), as in every client.
                Ok(guard) => return Leadership::new(guard, ttl, value).await,
                Err(Error::Contended { .. }) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Who leads `name` now (`None`: nobody), read from every node; [`Error::NoQuorum`] when
    /// too few answered to tell.
    pub async fn leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        election::leader(&self.backend, name).await
    }

    /// Follows who leads `name`: see [`Observer`]. Must be called within a Tokio runtime.
    pub fn observe(&self, name: &str) -> Result<Observer, Error> {
        election_watch::observe(&self.backend, name)
    }
}

/// The name, the TTL (with the validity it leaves after `drift`) and a semaphore's limit,
/// checked before any node is asked.
/// The groups taken so far given back after `error` (a later group failed).
async fn give_back(held: Vec<(LockGuard, Option<Watchdog>)>, error: Error) -> Error {
    for (guard, dog) in held.into_iter().rev() {
        if let Some(dog) = dog {
            dog.stop().await;
        }
        let _ = guard.release().await;
    }
    error
}

fn checked<'r>(
    resource: Resource<'r>,
    ttl: Duration,
    drift: &crate::timing::Drift,
) -> Result<Resource<'r>, Error> {
    check_name(resource.name)?;
    check_lease(ttl, drift)?;
    resource.kind.check()?;
    Ok(resource)
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
