//! [`LockManager`]: the entry point. Holds the nodes and options; acquires locks.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::attempt::Policy;
use crate::backend::Backend;
use crate::calls::{attempt_error, Calls};
use crate::checks::{check_lease, check_name, check_options, check_wait};
use crate::connect::{Connect, Tls};
use crate::driver::Acquire;
use crate::errors::Error;
use crate::kind::Resource;
use crate::lock::{LockContext, LockGuard};
use crate::options::{Options, ReplicaAck, WaitMode};
use crate::probe::WaitProbe;
use crate::timing::SystemClock;
use crate::transport::{RedisTransport, Transport};

/// Redlock across N independent masters running the dlock module. Cheap to clone.
#[derive(Clone)]
pub struct LockManager {
    pub(crate) backend: Arc<Backend>,
}

/// Builds a [`LockManager`]; every option starts at its default (docs/rust.md lists them).
pub struct LockManagerBuilder {
    urls: Vec<String>,
    opts: Options,
    connect: Connect,
}

impl LockManagerBuilder {
    /// Per-node bound on each step of a call: a new connection's handshake, its `DLOCK.RUNID`, the request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.opts.rounds.timeout = timeout;
        self
    }
    /// Most retries after the first attempt in [`LockManager::lock`] (`wait` bounds them too).
    pub fn retry_count(mut self, count: u32) -> Self {
        self.opts.retry_count = count;
        self
    }
    /// Pause between attempts.
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.opts.retry_delay = delay;
        self
    }
    /// Random extra pause, uniform in 0..jitter, so contenders do not retry in lockstep.
    pub fn retry_jitter(mut self, jitter: Duration) -> Self {
        self.opts.retry_jitter = jitter;
        self
    }
    /// Clock drift allowance as a fraction of the TTL.
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.opts.rounds.drift.factor = factor;
        self
    }
    /// Constant clock drift allowance.
    pub fn drift_constant(mut self, constant: Duration) -> Self {
        self.opts.rounds.drift.constant = constant;
        self
    }
    /// Quorum fencing tokens (two-phase); no effect with one node.
    pub fn fencing(mut self, on: bool) -> Self {
        self.opts.rounds.fencing = on;
        self
    }
    /// How often the watchdog of [`LockManager::with_lock`] extends (`None`: ttl / 3).
    pub fn extend_interval(mut self, interval: Option<Duration>) -> Self {
        self.opts.extend_interval = interval;
        self
    }
    /// How [`LockManager::lock`] waits: queued on the nodes (default) or by retrying.
    pub fn wait_mode(mut self, mode: WaitMode) -> Self {
        self.opts.wait_mode = mode;
        self
    }
    /// Whether grants, extensions and commits wait for replicas (default: on for
    /// `redis+cluster://` nodes, off for single masters).
    pub fn replica_ack(mut self, ack: ReplicaAck) -> Self {
        self.opts.replica_ack = ack;
        self
    }
    /// The longest the watchdog keeps a lock extended (`None`: no cap, the default). Past it the
    /// watchdog stops and the loss signal fires, so a stuck holder cannot keep a lock forever.
    pub fn max_hold(mut self, cap: Option<Duration>) -> Self {
        self.opts.max_hold = cap;
        self
    }

    /// TLS for `rediss://` and `rediss+cluster://` nodes (a CA bundle, a client certificate for
    /// mutual TLS); without it they are verified against the system's roots.
    pub fn tls(mut self, tls: Tls) -> Self {
        self.connect.tls = tls;
        self
    }
    /// The ACL user for every node whose URL names no credentials of its own.
    pub fn username(mut self, username: impl Into<String>) -> Self {
        self.connect.credentials.username = Some(username.into());
        self
    }
    /// The password (of `username`, or of the default user) for every node whose URL names no
    /// credentials of its own. Never shown in errors or `Debug` output.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.connect.credentials.password = Some(password.into());
        self
    }

    /// How an authentication failure says to give a user and password (the CLI names its flags).
    #[doc(hidden)]
    pub fn login_hint(mut self, hint: impl Into<String>) -> Self {
        self.connect.login_hint = Some(hint.into());
        self
    }

    /// The ACL user and password of the sentinels of `redis+sentinel://` nodes (the master's are
    /// the URL's, or [`LockManagerBuilder::username`] / [`LockManagerBuilder::password`]).
    pub fn sentinel_credentials(
        mut self,
        username: Option<String>,
        password: Option<String>,
    ) -> Self {
        self.connect.credentials.sentinel_username = username;
        self.connect.credentials.sentinel_password = password;
        self
    }

    /// Checks the URLs and the options; connects lazily (nodes may be down now and come up
    /// later).
    pub fn build(self) -> Result<LockManager, Error> {
        check_options(&self.opts)?;
        let transport = RedisTransport::new(&self.urls, self.opts.replica_ack, &self.connect)?;
        Ok(LockManager::with_transport(
            Box::new(transport),
            self.opts,
            Box::new(SystemClock),
        ))
    }
}

impl LockManager {
    /// A builder over `nodes`, one URL per quorum node (`redis://host:port`, `rediss://`,
    /// `unix:///path`, `redis+cluster://`, `redis+sentinel://h1,h2/name`; docs/connecting.md),
    /// to set options before [`LockManagerBuilder::build`] checks the URLs.
    pub fn builder<I, S>(nodes: I) -> LockManagerBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        LockManagerBuilder {
            urls: nodes.into_iter().map(|s| s.as_ref().to_string()).collect(),
            opts: Options::default(),
            connect: Connect::default(),
        }
    }

    /// A manager with every default.
    pub fn new<I, S>(nodes: I) -> Result<LockManager, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::builder(nodes).build()
    }

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
        let probe = Some(probe.clone());
        self.take(resource, (ttl, deadline), policy, probe, false)
            .await
    }

    /// How a call that waits waits: queued on the nodes, or retrying ([`WaitMode`]).
    pub(crate) fn waiting_policy(&self) -> Policy {
        if self.backend.queues() {
            Policy::Queue
        } else {
            self.no_wait()
        }
    }

    /// Attempts without a server wait commit their grants unless fencing is off.
    fn no_wait(&self) -> Policy {
        Policy::NoWait {
            commit: self.backend.opts.rounds.fencing,
        }
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
                let guard = LockGuard::new(self.backend.clone(), resource, &won.owner, won.granted);
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

/// The name, the TTL (with the validity it leaves after `drift`) and a semaphore's limit,
/// checked before any node is asked.
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
