//! [`LockManagerBuilder`]: a [`LockManager`]'s nodes and options, checked before it is made.

use std::time::Duration;

use crate::checks::check_options;
use crate::connect::{Connect, Tls};
use crate::errors::Error;
use crate::manager::LockManager;
use crate::options::{Options, ReplicaAck, WaitMode};
use crate::timing::SystemClock;
use crate::transport::RedisTransport;

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
}
