//! The manager's options and their defaults, stated once: the builder starts from
//! [`Options::default`], and the table in docs/rust.md is generated from the defaults by a test
//! (a test keeps it in step). Plain data below the rounds and the transport: this module uses
//! only `timing`, and the transport turns [`ReplicaAck`] into what each node asks
//! (`transport::ack`), so the dependency points one way.

use std::time::Duration;

use crate::timing::Drift;

/// What every round needs.
#[derive(Debug, Clone)]
pub struct RoundOptions {
    /// Per-node bound on each step of a call: a new connection's handshake, its `DLOCK.RUNID`, the request.
    pub timeout: Duration,
    pub drift: Drift,
    /// Two-phase quorum fencing (ignored with one node).
    pub fencing: bool,
}

/// How [`crate::LockManager::lock`] waits for a lock someone else holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitMode {
    /// Queue on the nodes (`DLOCK.ACQUIRE ... WAIT ... TICKET`): served in ticket order, woken
    /// by the release itself, no polling. Needs fencing with more than one node (the commit
    /// round is what makes tickets safe); without it `lock` falls back to [`WaitMode::Retry`].
    #[default]
    Queue,
    /// Try, sleep `retry_delay` plus jitter, try again: for nodes whose module predates
    /// server-side waits (before 0.2.0).
    Retry,
}

/// Whether a grant, extension or commit counts only once replicas have it (`WAIT`, pipelined
/// after the write). When fewer acknowledge in time, that node counts as not having granted
/// (docs/rust.md, Replica acknowledgement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaAck {
    /// One replica within `timeout` on `redis+cluster://` nodes, none on single masters.
    Auto {
        /// How long a write waits for the replica.
        timeout: Duration,
    },
    /// No acknowledgement: a grant counts when the node replies.
    Off,
    /// `count` replicas within `timeout`, on every node.
    Replicas {
        /// Replicas that must acknowledge.
        count: u32,
        /// How long a write waits for them.
        timeout: Duration,
    },
}

impl Default for ReplicaAck {
    fn default() -> Self {
        ReplicaAck::Auto {
            timeout: Duration::from_millis(100),
        }
    }
}

impl ReplicaAck {
    /// The longest a write may wait for its replicas on any node.
    pub(crate) fn longest(self) -> Duration {
        match self {
            ReplicaAck::Auto { timeout } | ReplicaAck::Replicas { timeout, .. } => timeout,
            ReplicaAck::Off => Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub rounds: RoundOptions,
    /// Most retries after the first attempt in `lock`.
    pub retry_count: u32,
    pub retry_delay: Duration,
    pub retry_jitter: Duration,
    /// Watchdog period; `None`: ttl / 3.
    pub extend_interval: Option<Duration>,
    pub wait_mode: WaitMode,
    /// Longest the watchdog keeps a lock extended; `None`: no cap.
    pub max_hold: Option<Duration>,
    pub replica_ack: ReplicaAck,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rounds: RoundOptions {
                timeout: Duration::from_millis(50),
                drift: Drift::default(),
                fencing: true,
            },
            retry_count: u32::MAX,
            retry_delay: Duration::from_millis(25),
            retry_jitter: Duration::from_millis(25),
            extend_interval: None,
            wait_mode: WaitMode::Queue,
            max_hold: None,
            replica_ack: ReplicaAck::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(builder call, default, meaning)` for each option, the defaults read from
    /// [`Options::default`].
    pub fn documented() -> Vec<(&'static str, String, &'static str)> {
        let d = Options::default();
        let ms = |d: Duration| format!("{} ms", d.as_millis());
        let count = |n: u32| {
            if n == u32::MAX {
                "unlimited".to_string()
            } else {
                n.to_string()
            }
        };
        let on = |b: bool| if b { "on" } else { "off" }.to_string();
        vec![
            (
                "timeout(d)",
                ms(d.rounds.timeout),
                "per-node bound on each step of a call: a new connection's handshake, its `DLOCK.RUNID`, the request",
            ),
            (
                "retry_count(n)",
                count(d.retry_count),
                "most retries after the first attempt in `lock` (`wait` bounds it anyway)",
            ),
            (
                "retry_delay(d)",
                ms(d.retry_delay),
                "pause between attempts",
            ),
            (
                "retry_jitter(d)",
                ms(d.retry_jitter),
                "extra random pause in 0..d so contenders do not retry in lockstep",
            ),
            (
                "drift_factor(f)",
                d.rounds.drift.factor.to_string(),
                "clock drift allowance, fraction of the TTL",
            ),
            (
                "drift_constant(d)",
                ms(d.rounds.drift.constant),
                "constant clock drift allowance",
            ),
            (
                "fencing(bool)",
                on(d.rounds.fencing),
                "two-phase quorum fencing (ignored with one node)",
            ),
            (
                "wait_mode(m)",
                format!("{:?}", d.wait_mode),
                "how `lock` waits: `Queue` (server-side FIFO by ticket, no polling) or `Retry` (sleep and retry; for modules before 0.2.0). `Queue` needs fencing on with several nodes, else `Retry` is used",
            ),
            (
                "max_hold(Some(d))",
                d.max_hold.map_or("none".to_string(), ms),
                "longest the watchdog of `with_lock` extends; past it extension stops and the loss signal fires",
            ),
            (
                "replica_ack(a)",
                match d.replica_ack {
                    ReplicaAck::Auto { timeout } => format!(
                        "`Auto`: 1 replica within {} on `redis+cluster://` nodes, none on single masters",
                        ms(timeout)
                    ),
                    other => format!("{other:?}"),
                },
                "`WAIT` pipelined after each grant, extension and commit; a node whose replicas do not acknowledge in time counts as not granted. `Off`, or `Replicas { count, timeout }` on every node",
            ),
            (
                "extend_interval(Some(d))",
                d.extend_interval.map_or("ttl / 3".to_string(), ms),
                "watchdog period in `with_lock`",
            ),
        ]
    }

    const START: &str = "<!-- options:start (generated from client/src/options.rs: DLOCK_BLESS=1 cargo test -p dlock-client options) -->\n";
    const END: &str = "<!-- options:end -->";

    #[test]
    fn docs_rust_md_options_table_matches_the_defaults() {
        let mut table = String::from("| builder option | default | meaning |\n|---|---|---|\n");
        for (call, default, meaning) in documented() {
            table += &format!("| `{call}` | {default} | {meaning} |\n");
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/rust.md");
        let doc = std::fs::read_to_string(path).expect("docs/rust.md");
        let (Some(start), Some(end)) = (doc.find(START), doc.find(END)) else {
            panic!("docs/rust.md lacks the markers {START} ... {END}");
        };
        if doc[start + START.len()..end] != table {
            if std::env::var_os("DLOCK_BLESS").is_some() {
                std::fs::write(
                    path,
                    format!("{}{START}{table}{}", &doc[..start], &doc[end..]),
                )
                .unwrap();
            } else {
                panic!("docs/rust.md options table is stale; run DLOCK_BLESS=1 cargo test -p dlock-client options\n{table}");
            }
        }
    }
}
