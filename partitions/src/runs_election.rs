//! The leader-election runs (workload_election.rs, checker_election.rs): the survivable faults
//! on five masters with AOF, which must be reported valid, and the same leader pause with the
//! gate bypassed, which must not.

use std::time::Duration;

use crate::faults::Fault;
use crate::nodes::NodeConfig;
use crate::run::Spec;
use crate::topology::Topology;
use crate::worker::Workload;

/// Why a leader stopped past its lease breaks an assumption: its loss signal fires only when
/// it runs again, so it still believes it leads while the next leader does. The gate must
/// refuse what it then writes.
const PAUSED: &str =
    "a leader is not stopped past its lease (its loss signal fires when it resumes)";

fn hosts(v: &[&str]) -> Vec<String> {
    v.iter().map(|h| h.to_string()).collect()
}

type Schedule = Vec<(Fault, Duration, Option<&'static str>)>;

/// A subset of redlock-partitions' faults (each ~3 s in a quick run), two of them aimed at the
/// leader: the minority side's client cannot win, a leader there loses leadership, the
/// majority elects another.
fn survivable(hold: Duration, ttl: Duration) -> Schedule {
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
        // The leader (mid-write) cut off with a minority, then alone with one node: it must
        // hear its loss signal before the majority's next leader is elected.
        (Fault::IsolateHolder(hosts(&["n1", "n2"])), hold, None),
        (Fault::IsolateHolder(hosts(&["n1"])), hold, None),
        (Fault::PauseNodes(vec![0, 1]), ttl * 2, None),
        (
            Fault::Crash(vec![0, 1, 2]),
            Duration::from_millis(300),
            None,
        ),
        // The leader stopped between its read and its write, for 3 leases.
        (Fault::PauseHolder, ttl * 3, Some(PAUSED)),
    ]
}

fn paused_leaders(ttl: Duration) -> Schedule {
    vec![(Fault::PauseHolder, ttl * 3, Some(PAUSED)); 3]
}

/// `redlock-election` (valid) and `election-broken-gate` (invalid).
pub fn runs(quick: bool, ttl: Duration) -> Vec<Spec> {
    let (hold, quiet) = if quick {
        (Duration::from_secs(3), Duration::from_secs(1))
    } else {
        (Duration::from_secs(8), Duration::from_secs(3))
    };
    let spec = |name, about, faults, bypass_gate, expect_valid| Spec {
        name,
        topology: Topology::Redlock,
        about,
        clients: 3,
        ttl_ms: ttl.as_millis() as u64,
        hold_ms: 100,
        bypass_gate,
        workload: Workload::Election,
        node: NodeConfig {
            aof: true,
            quarantine_ms: 0,
            extra: Vec::new(),
            clock_shim: None,
        },
        faults,
        quiet,
        mix: &[],
        misbehave: false,
        expect_valid,
    };
    vec![
        spec(
            "redlock-election",
            "leader election on 5 masters, AOF always: partitions, SIGSTOP and kill -9 of nodes, the leader stopped past its lease; guarded writes with the epoch",
            survivable(hold, ttl),
            false,
            true,
        ),
        spec(
            "election-broken-gate",
            "leader election, the leader stopped past its lease, its writes bypassing the gate",
            paused_leaders(ttl),
            true,
            false,
        ),
    ]
}
