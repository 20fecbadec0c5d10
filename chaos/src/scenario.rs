//! The scenarios, as data: which fault hits the nodes while the workers contend for one lock
//! (or, in scenario 11, the holders for a semaphore's permits), and what the verdict allows.
//! How each is played is play/'s; how its fault is injected, fixture/'s.

use std::time::Duration;

pub const NODES: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    KillMinorityAof,
    WipeMajority,
    WipeMajorityQuarantined,
    PauseWorker,
    PauseNode,
    ClockJump,
    SlowLink,
    /// Redis Cluster: the lock's shard loses its replica link, then its master (scenarios 9,
    /// 10); `ack`: the client's replica acknowledgement.
    ClusterFailover {
        ack: bool,
    },
    /// Scenario 11: holder processes of a semaphore of `limit` permits, one at a time SIGSTOPped
    /// past the TTL, while nodes crash and restart as in `KillMinorityAof` (play/semaphore.rs).
    StopHolders {
        limit: u32,
    },
}

pub struct Scenario {
    pub number: u8,
    pub name: &'static str,
    pub fault: Fault,
    /// Whether the criterion allows overlaps (the fencing check must then catch them).
    pub overlaps_allowed: bool,
    pub breaks: &'static str,
    pub ttl: Duration,
    /// Length of one critical section, split over `writes` writes to the resource.
    pub hold: Duration,
    pub writes: u32,
    /// Runs without a defence on purpose: its order violations show what the defence prevents
    /// and do not fail the suite.
    pub hazard: bool,
}

impl Scenario {
    /// A lock scenario with the defaults, changed field by field where one differs: a 2 s TTL,
    /// sections of 20 ms split over 3 writes, no overlap allowed, not a hazard.
    fn new(number: u8, name: &'static str, fault: Fault, breaks: &'static str) -> Scenario {
        Scenario {
            number,
            name,
            fault,
            overlaps_allowed: false,
            breaks,
            ttl: Duration::from_millis(2_000),
            hold: Duration::from_millis(20),
            writes: 3,
            hazard: false,
        }
    }
}

/// The scenarios, numbered as in docs/safety/chaos.md's table.
pub fn all() -> Vec<Scenario> {
    [crashes(), stalls(), on_a_cluster(), on_a_semaphore()]
        .into_iter()
        .flatten()
        .collect()
}

/// Scenarios 1-4, one lock on five nodes: none, then nodes killed (with AOF, wiped, wiped and
/// quarantined).
fn crashes() -> Vec<Scenario> {
    let ms = Duration::from_millis;
    vec![
        Scenario::new(1, "no faults", Fault::None, "nothing (baseline)"),
        Scenario::new(
            2,
            "kill -9 + restart a minority, AOF always",
            Fault::KillMinorityAof,
            "node crashes (with durable state)",
        ),
        Scenario {
            overlaps_allowed: true,
            hold: ms(300),
            ..Scenario::new(
                3,
                "kill -9 + wipe a majority, no quarantine",
                Fault::WipeMajority,
                "nodes keep their grants across crashes",
            )
        },
        Scenario {
            hold: ms(300),
            ..Scenario::new(
                4,
                "kill -9 + wipe a majority, quarantine = TTL",
                Fault::WipeMajorityQuarantined,
                "nodes keep their grants (quarantine restores it)",
            )
        },
    ]
}

/// Scenarios 5-8, one lock on five nodes: a worker or a node stalled, a clock that jumps, a slow
/// link.
fn stalls() -> Vec<Scenario> {
    let ms = Duration::from_millis;
    vec![
        Scenario {
            overlaps_allowed: true,
            ttl: ms(1_000),
            hold: ms(30),
            ..Scenario::new(
                5,
                "worker paused past its TTL (GC pause)",
                Fault::PauseWorker,
                "bounded process pauses",
            )
        },
        Scenario {
            ttl: ms(1_000),
            ..Scenario::new(
                6,
                "node paused (SIGSTOP) longer than the TTL",
                Fault::PauseNode,
                "nodes answer promptly",
            )
        },
        Scenario {
            overlaps_allowed: true,
            ..Scenario::new(
                7,
                "wall clock jumps forward on one node",
                Fault::ClockJump,
                "bounded clock drift",
            )
        },
        Scenario::new(
            8,
            "slow, lossy network to one node",
            Fault::SlowLink,
            "bounded message delay",
        ),
    ]
}

/// Scenarios 9 and 10: the lock on a Redis Cluster whose shard fails over.
fn on_a_cluster() -> Vec<Scenario> {
    let breaks = "replication keeps up with the master";
    vec![
        Scenario::new(
            9,
            "cluster: replica link cut, master killed, replica ack on",
            Fault::ClusterFailover { ack: true },
            breaks,
        ),
        Scenario {
            overlaps_allowed: true,
            hazard: true,
            ..Scenario::new(
                10,
                "cluster: replica link cut, master killed, replica ack off",
                Fault::ClusterFailover { ack: false },
                breaks,
            )
        },
    ]
}

/// Scenario 11: a semaphore's holders, as processes of their own.
fn on_a_semaphore() -> Vec<Scenario> {
    vec![Scenario {
        ttl: Duration::from_millis(1_000),
        // The holders pick 50-150 ms each (workloads/holder.rs); these two are unused.
        hold: Duration::from_millis(100),
        writes: 0,
        ..Scenario::new(
            11,
            "semaphore: holders SIGSTOPped past the TTL, kill -9 + restart a node",
            Fault::StopHolders { limit: 2 },
            "bounded process pauses, node crashes",
        )
    }]
}
