//! What a manager and the guards it hands out share: the nodes, the options and the clock.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::kind::LockKind;
use crate::options::{Options, WaitMode};
use crate::round::Round;
use crate::timing::Clock;
use crate::transport::{ack_allowance, Transport};

pub struct Shared {
    pub transport: Box<dyn Transport>,
    pub opts: Options,
    pub clock: Box<dyn Clock>,
    /// Work left to run after a call answered (releases of abandoned rounds and dropped
    /// guards, late grants followed to their end), so a process can let it finish before it
    /// exits.
    pub background: TaskTracker,
}

impl Shared {
    pub fn new(transport: Box<dyn Transport>, opts: Options, clock: Box<dyn Clock>) -> Shared {
        Shared {
            transport,
            opts,
            clock,
            background: TaskTracker::new(),
        }
    }

    /// Runs `work` in the background, tracked (see [`Shared::background`]); nothing outside a
    /// Tokio runtime (a guard dropped after its runtime).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.background.spawn_on(work, &runtime);
        }
    }

    /// The rounds of one exclusive lock.
    pub fn round<'a>(&'a self, resource: &'a str, owner: &'a str) -> Round<'a> {
        self.round_of(resource, owner, LockKind::Exclusive)
    }

    /// The rounds of one lock of `kind` (its quorum).
    pub fn round_of<'a>(&'a self, resource: &'a str, owner: &'a str, kind: LockKind) -> Round<'a> {
        Round {
            transport: self.transport.as_ref(),
            clock: self.clock.as_ref(),
            opts: &self.opts.rounds,
            resource,
            owner,
            kind,
        }
    }

    /// The longest one call to a node may take when it does not wait on the server: the
    /// per-node timeout plus the replica acknowledgement's.
    pub fn call_bound(&self) -> Duration {
        self.opts.rounds.timeout + ack_allowance(self.opts.replica_ack.longest())
    }

    pub fn nodes(&self) -> usize {
        self.transport.nodes()
    }

    /// `retry_delay` plus a random share of `retry_jitter`, so contenders do not retry in
    /// lockstep.
    pub fn retry_pause(&self) -> Duration {
        let opts = &self.opts;
        let jitter_ms = opts.retry_jitter.as_millis() as u64;
        let extra = if jitter_ms == 0 {
            0
        } else {
            rand::rng().random_range(0..jitter_ms)
        };
        opts.retry_delay + Duration::from_millis(extra)
    }

    /// Whether `lock` waits on the nodes (see [`WaitMode`]).
    pub fn queues(&self) -> bool {
        self.opts.wait_mode == WaitMode::Queue && (self.nodes() == 1 || self.opts.rounds.fencing)
    }
}

/// The nodes take whole milliseconds, at least 1.
pub fn check_ttl(ttl: Duration) -> Result<(), Error> {
    if ttl.as_millis() == 0 {
        return Err(Error::InvalidArgument("ttl must be at least 1 ms".into()));
    }
    Ok(())
}

/// A fresh owner: 128 random bits, hex. Unique per acquisition, as the protocol requires.
pub fn new_owner() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}
