//! What a manager and the locks it hands out share: the nodes (the transport), the options,
//! the clock, and the work left running in the background.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tokio_util::task::TaskTracker;

use crate::errors::Error;
use crate::local_waits::LocalWaits;
use crate::options::{Options, WaitMode};
use crate::timing::Clock;
use crate::transport::{ack_allowance, Transport};

pub struct Backend {
    pub transport: Box<dyn Transport>,
    pub opts: Options,
    pub clock: Box<dyn Clock>,
    /// Work left to run after a call answered (releases of abandoned rounds and dropped
    /// guards, late grants followed to their end), so a process can let it finish before it
    /// exits.
    pub background: TaskTracker,
    /// One server-side wait per resource; the manager's other callers queue here.
    pub local_waits: LocalWaits,
}

impl Backend {
    pub fn new(transport: Box<dyn Transport>, opts: Options, clock: Box<dyn Clock>) -> Backend {
        Backend {
            transport,
            opts,
            clock,
            background: TaskTracker::new(),
            local_waits: LocalWaits::default(),
        }
    }

    /// Runs `work` in the background, tracked (see [`Backend::background`]); nothing outside a
    /// Tokio runtime (a guard dropped after its runtime).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.background.spawn_on(work, &runtime);
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

    /// Whether `lock` waits on the nodes (see [`WaitMode`]): tickets are safe only with the
    /// commit round, so with several nodes queue mode needs fencing.
    pub fn queues(&self) -> bool {
        self.opts.wait_mode == WaitMode::Queue && (self.nodes() == 1 || self.opts.rounds.fencing)
    }
}

/// The longest TTL a node takes by default (`dlock.max-ttl-ms`, 86400000): a day. Longer ones
/// are refused before any node is asked, as every client does.
pub const MAX_TTL: Duration = Duration::from_secs(86_400);

/// The nodes take whole milliseconds, at least 1, and at most [`MAX_TTL`] by default.
pub fn check_ttl(ttl: Duration) -> Result<(), Error> {
    if ttl.as_millis() == 0 || ttl > MAX_TTL {
        return Err(Error::InvalidArgument(format!(
            "ttl must be from 1 ms to 1 day (86400000 ms, the nodes' default dlock.max-ttl-ms), got {ttl:?}"
        )));
    }
    Ok(())
}

/// A fresh owner: 128 random bits, hex. Unique per acquisition, as the protocol requires.
pub fn new_owner() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}
