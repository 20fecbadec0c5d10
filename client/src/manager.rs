//! [`LockManager`]: the entry point. Holds the nodes and options; acquires locks.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use crate::error::Error;
use crate::guard::{LockContext, LockGuard};
use crate::node::Node;
use crate::quorum::{self, AttemptError, RoundOptions};
use crate::timing::{quorum as majority, Clock, Drift, SystemClock};

/// Options with the defaults documented in docs/client.md.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub rounds: RoundOptions,
    pub retry_count: u32,
    pub retry_delay: Duration,
    pub retry_jitter: Duration,
    pub extend_interval: Option<Duration>,
}

pub(crate) struct Inner {
    pub nodes: Vec<Node>,
    pub opts: Options,
    pub clock: Box<dyn Clock>,
}

/// Redlock across N independent masters running the dlock module. Cheap to clone.
#[derive(Clone)]
pub struct LockManager {
    pub(crate) inner: Arc<Inner>,
}

/// Builds a [`LockManager`]; see each method for its default.
pub struct LockManagerBuilder {
    urls: Vec<String>,
    opts: Options,
}

impl LockManagerBuilder {
    /// Per-node timeout for every call, connecting included. Default 50 ms.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.opts.rounds.timeout = timeout;
        self
    }
    /// Most retries after the first attempt in [`LockManager::lock`]. Default unlimited
    /// (bounded by `wait`).
    pub fn retry_count(mut self, count: u32) -> Self {
        self.opts.retry_count = count;
        self
    }
    /// Pause between attempts. Default 25 ms.
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.opts.retry_delay = delay;
        self
    }
    /// Random extra pause, uniform in 0..jitter, so contenders do not retry in lockstep.
    /// Default 25 ms.
    pub fn retry_jitter(mut self, jitter: Duration) -> Self {
        self.opts.retry_jitter = jitter;
        self
    }
    /// Clock drift allowance as a fraction of the TTL. Default 0.01.
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.opts.rounds.drift.factor = factor;
        self
    }
    /// Constant clock drift allowance. Default 2 ms.
    pub fn drift_constant(mut self, constant: Duration) -> Self {
        self.opts.rounds.drift.constant = constant;
        self
    }
    /// Quorum fencing tokens (two-phase, protocol.md §4). Default on; no effect with one node.
    pub fn fencing(mut self, on: bool) -> Self {
        self.opts.rounds.fencing = on;
        self
    }
    /// How often the watchdog of [`LockManager::with_lock`] extends. Default `None`: ttl / 3.
    pub fn extend_interval(mut self, interval: Option<Duration>) -> Self {
        self.opts.extend_interval = interval;
        self
    }

    /// Checks the URLs; connects lazily (nodes may be down now and come up later).
    pub fn build(self) -> Result<LockManager, Error> {
        if self.urls.is_empty() {
            return Err(Error::InvalidArgument("no nodes given".into()));
        }
        let nodes = self
            .urls
            .iter()
            .map(|url| Node::new(url))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LockManager {
            inner: Arc::new(Inner {
                nodes,
                opts: self.opts,
                clock: Box::new(SystemClock),
            }),
        })
    }
}

impl LockManager {
    pub fn builder<I, S>(nodes: I) -> LockManagerBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        LockManagerBuilder {
            urls: nodes.into_iter().map(|s| s.as_ref().to_string()).collect(),
            opts: Options {
                rounds: RoundOptions {
                    timeout: Duration::from_millis(50),
                    drift: Drift::default(),
                    fencing: true,
                },
                retry_count: u32::MAX,
                retry_delay: Duration::from_millis(25),
                retry_jitter: Duration::from_millis(25),
                extend_interval: None,
            },
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

    pub fn node_urls(&self) -> Vec<String> {
        self.inner
            .nodes
            .iter()
            .map(|n| n.url().to_string())
            .collect()
    }

    /// One attempt, with a fresh owner.
    pub async fn try_lock(&self, resource: &str, ttl: Duration) -> Result<LockGuard, Error> {
        check_ttl(ttl)?;
        let owner = new_owner();
        self.attempt(resource, &owner, ttl)
            .await
            .map_err(|e| self.to_error(resource, e, 1))
    }

    /// Retries (delay + jitter) until acquired or `wait` has passed.
    pub async fn lock(
        &self,
        resource: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<LockGuard, Error> {
        check_ttl(ttl)?;
        let owner = new_owner();
        let deadline = self.inner.clock.now() + wait;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let failure = match self.attempt(resource, &owner, ttl).await {
                Ok(guard) => return Ok(guard),
                Err(e) => e,
            };
            let pause = self.retry_pause();
            let out_of_time = self.inner.clock.now() + pause > deadline;
            if out_of_time || attempts > self.inner.opts.retry_count {
                return Err(self.to_error(resource, failure, attempts));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Runs `work` while a watchdog keeps the lock extended, then releases it. `work` sees
    /// [`LockContext::lost`] fire as soon as an extension misses a majority or validity runs
    /// out; `with_lock` then returns [`Error::LockLost`] instead of the work's output.
    pub async fn with_lock<F, Fut, T>(
        &self,
        resource: &str,
        ttl: Duration,
        wait: Duration,
        work: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.lock(resource, ttl, wait).await?;
        let watchdog = guard.watchdog(ttl);
        let output = work(watchdog.context()).await;
        let lost = watchdog.stop().await;
        let _ = guard.release().await;
        if lost {
            Err(Error::LockLost {
                resource: resource.to_string(),
            })
        } else {
            Ok(output)
        }
    }

    async fn attempt(
        &self,
        resource: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<LockGuard, AttemptError> {
        let inner = &self.inner;
        let granted = quorum::acquire(
            &inner.nodes,
            resource,
            owner,
            ttl,
            &inner.opts.rounds,
            inner.clock.as_ref(),
        )
        .await?;
        Ok(LockGuard::new(self.clone(), resource, owner, granted))
    }

    fn retry_pause(&self) -> Duration {
        let opts = &self.inner.opts;
        let jitter_ms = opts.retry_jitter.as_millis() as u64;
        let extra = if jitter_ms == 0 {
            0
        } else {
            rand::rng().random_range(0..jitter_ms)
        };
        opts.retry_delay + Duration::from_millis(extra)
    }

    fn to_error(&self, resource: &str, failure: AttemptError, attempts: u32) -> Error {
        let resource = resource.to_string();
        match failure {
            AttemptError::Contended => Error::Contended { resource, attempts },
            AttemptError::NoQuorum(failures) => Error::NoQuorum {
                resource,
                needed: majority(self.inner.nodes.len()),
                failures,
            },
            AttemptError::ValidityExpired => Error::ValidityExpired { resource },
        }
    }
}

/// The nodes take whole milliseconds, at least 1.
pub(crate) fn check_ttl(ttl: Duration) -> Result<(), Error> {
    if ttl.as_millis() == 0 {
        return Err(Error::InvalidArgument("ttl must be at least 1 ms".into()));
    }
    Ok(())
}

/// A fresh owner: 128 random bits, hex. Unique per acquisition, as the protocol requires.
pub(crate) fn new_owner() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}
