//! The runs `make partitions` (and, shorter, `make partitions-quick`) play: each a topology,
//! a workload, a configuration and a schedule of faults, and what the run must report.

use std::time::Duration;

use crate::faults::Fault;
use crate::nodes::NodeConfig;
use crate::run::{Client, Spec};
use crate::topology::Topology;
use crate::worker::Workload;

pub(crate) fn hosts(v: &[&str]) -> Vec<String> {
    v.iter().map(|h| h.to_string()).collect()
}

const NODE_HOSTS: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

/// Network and process faults a correct configuration must survive (nothing assumed broken).
fn survivable(hold: Duration, ttl: Duration) -> Vec<(Fault, Duration, Option<&'static str>)> {
    let part = |a: &[&str], b: &[&str]| Fault::Partition {
        a: hosts(a),
        b: hosts(b),
    };
    vec![
        (
            part(&["n1", "n2", "c1"], &["n3", "n4", "n5", "c2", "c3"]),
            hold,
            None,
        ),
        (
            part(&["n1", "c1"], &["n2", "n3", "n4", "n5", "c2", "c3"]),
            hold,
            None,
        ),
        // n3 is in neither side: it sees both, the bridge of Jepsen's partitions.
        (
            part(&["n1", "n2", "c1"], &["n4", "n5", "c2", "c3"]),
            hold,
            None,
        ),
        (
            Fault::OneWay {
                from: hosts(&["c1", "c2"]),
                to: hosts(&["n1", "n2"]),
            },
            hold,
            None,
        ),
        (
            Fault::Loss {
                hosts: hosts(&NODE_HOSTS),
                percent: 30,
            },
            hold,
            None,
        ),
        (
            Fault::Delay {
                hosts: hosts(&["n1", "n2"]),
                ms: 200,
            },
            hold,
            None,
        ),
        (Fault::PauseNodes(vec![0, 1]), ttl * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        // A client frozen past its lease: its late write must be refused by the gate.
        (Fault::PauseHolder, ttl * 3, None),
    ]
}

/// kill -9 of a majority, restarted at once on empty data: the holder's grants are forgotten.
fn amnesia(times: usize) -> Vec<(Fault, Duration, Option<&'static str>)> {
    let crash = (
        Fault::Crash(vec![0, 1, 2]),
        Duration::from_millis(30),
        Some("nodes keep their grants across crashes (no AOF, no quarantine)"),
    );
    vec![crash; times]
}

fn pauses(ttl: Duration) -> Vec<(Fault, Duration, Option<&'static str>)> {
    vec![(Fault::PauseHolder, ttl * 3, None); 3]
}

pub(crate) fn aof() -> NodeConfig {
    NodeConfig {
        aof: true,
        quarantine_ms: 0,
        extra: Vec::new(),
        clock_shim: None,
    }
}

fn volatile(quarantine_ms: u64) -> NodeConfig {
    NodeConfig {
        aof: false,
        quarantine_ms,
        extra: Vec::new(),
        clock_shim: None,
    }
}

/// Every run; `quick` shortens the faults and the quiet between them (about 2 minutes in all).
pub fn all(quick: bool) -> Vec<Spec> {
    let ttl = Duration::from_millis(1_000);
    let (hold, quiet) = if quick {
        (Duration::from_secs(3), Duration::from_secs(1))
    } else {
        (Duration::from_secs(10), Duration::from_secs(4))
    };
    let crashes = if quick { 8 } else { 12 };
    let base = |name, about, faults, node, bypass_gate, expect_valid| Spec {
        name,
        topology: Topology::Redlock,
        about,
        clients: 3,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 200,
        bypass_gate,
        workload: Workload::Mutex,
        node,
        faults,
        quiet,
        expect_valid,
        mix: &[],
        misbehave: false,
    };
    let mut runs = vec![
        base(
            "redlock-partitions",
            "5 masters, AOF always: partitions, one-way loss, a bridge, loss, delay, SIGSTOP, kill -9; guarded register",
            survivable(hold, ttl),
            aof(),
            false,
            true,
        ),
        base(
            "redlock-amnesia",
            "5 masters without AOF or quarantine, a majority killed and restarted empty; guarded register",
            amnesia(crashes),
            volatile(0),
            false,
            true,
        ),
        base(
            "redlock-amnesia-quarantine",
            "the same crashes with dlock.quarantine-ms = TTL",
            amnesia(crashes),
            volatile(ttl.as_millis() as u64),
            false,
            true,
        ),
        base(
            "redlock-broken-gate",
            "5 masters, clients SIGSTOPped past their lease, reads and writes bypassing the gate",
            pauses(ttl),
            aof(),
            true,
            false,
        ),
    ];
    runs.extend(sentinel(quick, ttl));
    runs.extend(mixed_clients(hold, quiet, ttl));
    runs.extend(crate::runs_election::runs(quick, ttl));
    runs.extend(crate::runs_shared::all(quick, ttl));
    runs.extend(cluster(quick, ttl));
    runs.extend(crate::runs_clock::runs(quick, ttl));
    runs
}

/// Each non-Rust client cut off on a minority side, then paused past its lease.
fn mixed_faults(hold: Duration, ttl: Duration) -> Vec<(Fault, Duration, Option<&'static str>)> {
    let part = |a: &[&str], b: &[&str]| Fault::Partition {
        a: hosts(a),
        b: hosts(b),
    };
    vec![
        // Each non-Rust client on a minority side in turn: it must not take the lock there.
        (
            part(&["n1", "n2", "c3"], &["n3", "n4", "n5", "c1", "c2"]),
            hold,
            None,
        ),
        (
            part(&["n4", "n5", "c2"], &["n1", "n2", "n3", "c1", "c3"]),
            hold,
            None,
        ),
        // Frozen past the lease inside a critical section, then the CLI client (its whole
        // host: dlock run and its command) whatever it was doing.
        (Fault::PauseHolder, ttl * 3, None),
        (Fault::PauseClient(3), ttl * 3, None),
    ]
}

/// The Python library and the CLI as clients beside the Rust one (c1 Rust, c2 Python, c3 CLI).
fn mixed_clients(hold: Duration, quiet: Duration, ttl: Duration) -> Vec<Spec> {
    let survivable = mixed_faults(hold, ttl);
    const MIX: &[Client] = &[Client::Rust, Client::Python, Client::Cli];
    // Python only: a stopped CLI section races dlock run's SIGTERM on resume (the lock is found
    // lost), so whether its late write lands is chance; the verdict must not be.
    const UNGATED: &[Client] = &[Client::Python; 3];
    let spec = |name, about, faults, bypass_gate, expect_valid, mix| Spec {
        name,
        topology: Topology::Redlock,
        about,
        clients: 3,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 200,
        bypass_gate,
        node: aof(),
        faults,
        quiet,
        expect_valid,
        mix,
        workload: Workload::Mutex,
        misbehave: false,
    };
    vec![
        spec(
            "redlock-mixed-clients",
            "5 masters, AOF: c1 Rust, c2 Python, c3 the CLI (dlock run); minority partitions, holders SIGSTOPped past their lease; guarded register",
            survivable,
            false,
            true,
            MIX,
        ),
        spec(
            "redlock-broken-gate-python",
            "5 masters, AOF: three Python clients SIGSTOPped past their lease, reads and writes bypassing the gate",
            pauses(ttl),
            true,
            false,
            UNGATED,
        ),
    ]
}

/// The split-brain case: the master isolated with one client (c1) on its side, long enough for
/// the sentinels on the majority side to promote a replica; then healed (the old master
/// rejoins as a replica).
fn split_brain(quick: bool) -> Vec<(Fault, Duration, Option<&'static str>)> {
    let hold = Duration::from_secs(if quick { 7 } else { 15 });
    let isolate = Fault::Partition {
        a: hosts(&["n1", "c1"]),
        b: hosts(&["n2", "n3", "c2", "c3"]),
    };
    vec![(isolate, hold, None)]
}

/// Redis Cluster's split brain: the master serving the lock's slot (found when the fault
/// starts) cut off with c1, long enough for the majority to promote its replica (the node
/// timeout, the failure reports' gossip, the election: about 2-3 s); then healed (the old
/// master rejoins as a replica). `slow_ms`: the old master's node timeout raised first.
fn cluster_split(
    quick: bool,
    slow_ms: Option<u64>,
) -> Vec<(Fault, Duration, Option<&'static str>)> {
    let hold = Duration::from_secs(if quick { 6 } else { 15 });
    let isolate = Fault::IsolateKeyMaster {
        key: crate::worker::RESOURCE.into(),
        with: hosts(&["c1"]),
        slow_ms,
    };
    vec![(isolate, hold, None)]
}

fn sentinel(quick: bool, ttl: Duration) -> Vec<Spec> {
    let quiet = Duration::from_secs(if quick { 4 } else { 6 });
    let spec = |name, about, replicas, bypass_gate, expect_valid| Spec {
        name,
        topology: Topology::Sentinel { replicas },
        about,
        clients: 3,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 200,
        bypass_gate,
        workload: Workload::Mutex,
        node: aof(),
        faults: split_brain(quick),
        quiet,
        expect_valid,
        mix: &[],
        misbehave: false,
    };
    vec![
        spec(
            "sentinel-ack-on",
            "Sentinel master + 2 replicas, old master isolated with c1; each grant waits for 1 replica (WAIT)",
            1,
            false,
            true,
        ),
        spec(
            "sentinel-ack-off",
            "the same isolation without replica acknowledgement: both masters grant (split brain)",
            0,
            false,
            false,
        ),
        spec(
            "sentinel-ack-off-broken-gate",
            "split brain without acknowledgement, and reads/writes bypassing the gate",
            0,
            true,
            false,
        ),
    ]
}

fn cluster(quick: bool, ttl: Duration) -> Vec<Spec> {
    let quiet = Duration::from_secs(if quick { 4 } else { 6 });
    let spec = |name, about, replicas, slow_ms, expect_valid| Spec {
        name,
        topology: Topology::Cluster { replicas },
        about,
        clients: 3,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 200,
        bypass_gate: false,
        node: aof(),
        faults: cluster_split(quick, slow_ms),
        quiet,
        expect_valid,
        mix: &[],
        workload: Workload::Mutex,
        misbehave: false,
    };
    vec![
        spec(
            "cluster-ack-on",
            "Redis Cluster 3+3, the lock's master isolated with c1; each grant waits for 1 replica",
            1,
            None,
            true,
        ),
        spec(
            "cluster-ack-off",
            "the same isolation without replica acknowledgement",
            0,
            None,
            true,
        ),
        spec(
            "cluster-ack-off-slow-master",
            "no acknowledgement, and the isolated master's cluster-node-timeout longer than the partition",
            0,
            Some(60_000),
            false,
        ),
    ]
}
