//! The faults a run's schedule is made of, as data: what each does is `apply.rs`'s. A run's
//! schedule is a list of faults, each held for a while and followed by quiet; the runs
//! (runs/) write schedules, the nemesis plays them.

use std::time::Duration;

/// One fault. Host names are the short ones (`n1`, `c2`); hosts named nowhere keep their links.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Neither side reaches the other (a majority/minority split, a master isolated with its
    /// client, or a bridge: a host left out of both sides sees both).
    Partition { a: Vec<String>, b: Vec<String> },
    /// Packets from `from` never arrive at `to`; the other way works.
    OneWay { from: Vec<String>, to: Vec<String> },
    /// Every packet arriving at these hosts dropped with this probability (nftables numgen).
    Loss { hosts: Vec<String>, percent: u32 },
    /// Every packet these hosts send held `ms`: `tc netem` where the kernel has it, else an
    /// NFQUEUE rule and the delayer (delayer.rs); the window's name says which.
    Delay { hosts: Vec<String>, ms: u32 },
    /// SIGSTOP these nodes (by index), SIGCONT at the heal.
    PauseNodes(Vec<usize>),
    /// SIGSTOP a client process (by worker id), SIGCONT at the heal.
    PauseClient(u32),
    /// SIGSTOP whichever client is between its read and its write (it holds the lock), so the
    /// pause lands inside a critical section every time; SIGCONT at the heal.
    PauseHolder,
    /// Whichever client is inside its critical section (the leader, in the election workload)
    /// cut off together with these nodes from every other node and client; the register stays
    /// reachable, so what the cut-off client still writes is what the gate must refuse.
    /// Healed as a partition.
    IsolateHolder(Vec<String>),
    /// kill -9 these nodes, restart them at the heal (AOF or not, as the run's nodes are).
    Crash(Vec<usize>),
    /// Redis Cluster: the master serving `key`'s slot, found when the fault starts, partitioned
    /// with the hosts `with` from every other node and client. `slow_ms`: first set that
    /// master's `cluster-node-timeout` to this (a master too slow to notice it is cut off).
    IsolateKeyMaster {
        key: String,
        with: Vec<String>,
        slow_ms: Option<u64>,
    },
    /// These nodes' wall clocks step by `ms` (the clock shim, topology/clock.rs), at a moment a
    /// client is inside its critical section when one is (waits up to 3 s for one); the heal
    /// steps them back to real time. Monotonic clocks do not move.
    ClockOffset { nodes: Vec<usize>, ms: i64 },
}

/// One step of a schedule: the fault, how long it is held, and, when it breaks one of the
/// protocol's assumptions, which (docs/safety/partitions.md): overlaps it causes are then expected.
pub type Step = (Fault, Duration, Option<&'static str>);

/// Faults in order: each held, then healed, then the run's quiet without faults.
pub type Schedule = Vec<Step>;

/// How a fault is named in the report and on the chart.
pub fn name(f: &Fault) -> String {
    let join = |v: &[String]| v.join(",");
    match f {
        Fault::Partition { a, b } => format!("partition {} | {}", join(a), join(b)),
        Fault::OneWay { from, to } => format!("one-way {} -x-> {}", join(from), join(to)),
        Fault::Loss { hosts, percent } => format!("loss {percent}% at {}", join(hosts)),
        Fault::Delay { hosts, ms } => format!("delay {ms} ms at {}", join(hosts)),
        Fault::PauseNodes(n) => format!("SIGSTOP nodes {n:?}"),
        Fault::PauseClient(c) => format!("SIGSTOP client c{c}"),
        Fault::PauseHolder => "SIGSTOP the holder".into(),
        Fault::IsolateHolder(with) => format!("partition the holder,{} | rest", join(with)),
        Fault::Crash(n) => format!("kill -9 + restart nodes {n:?}"),
        Fault::IsolateKeyMaster { key, with, .. } => {
            format!("partition master of {key:?},{} | rest", join(with))
        }
        Fault::ClockOffset { nodes, ms } => format!("wall clock {ms:+} ms on nodes {nodes:?}"),
    }
}

/// Whether a schedule moves clocks: only then are the nodes started with the clock shim
/// (topology/clock.rs), so every other run's servers are exactly as before.
pub fn moves_clocks(schedule: &[Step]) -> bool {
    schedule
        .iter()
        .any(|(f, _, _)| matches!(f, Fault::ClockOffset { .. }))
}
