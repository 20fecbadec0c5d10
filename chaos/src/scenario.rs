//! The scenarios: how the nodes are set up and which fault hits them while the workers
//! contend for one lock.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_testkit::{Builder, Server};

use crate::proxy::Link;

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
    /// past the TTL, while nodes crash and restart as in `KillMinorityAof` (crate::semaphore).
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

/// The scenarios, numbered as in docs/safety/chaos.md's table.
pub fn all() -> Vec<Scenario> {
    let ms = Duration::from_millis;
    vec![
        Scenario {
            number: 1,
            name: "no faults",
            fault: Fault::None,
            overlaps_allowed: false,
            breaks: "nothing (baseline)",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 2,
            name: "kill -9 + restart a minority, AOF always",
            fault: Fault::KillMinorityAof,
            overlaps_allowed: false,
            breaks: "node crashes (with durable state)",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 3,
            name: "kill -9 + wipe a majority, no quarantine",
            fault: Fault::WipeMajority,
            overlaps_allowed: true,
            breaks: "nodes keep their grants across crashes",
            ttl: ms(2_000),
            hold: ms(300),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 4,
            name: "kill -9 + wipe a majority, quarantine = TTL",
            fault: Fault::WipeMajorityQuarantined,
            overlaps_allowed: false,
            breaks: "nodes keep their grants (quarantine restores it)",
            ttl: ms(2_000),
            hold: ms(300),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 5,
            name: "worker paused past its TTL (GC pause)",
            fault: Fault::PauseWorker,
            overlaps_allowed: true,
            breaks: "bounded process pauses",
            ttl: ms(1_000),
            hold: ms(30),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 6,
            name: "node paused (SIGSTOP) longer than the TTL",
            fault: Fault::PauseNode,
            overlaps_allowed: false,
            breaks: "nodes answer promptly",
            ttl: ms(1_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 7,
            name: "wall clock jumps forward on one node",
            fault: Fault::ClockJump,
            overlaps_allowed: true,
            breaks: "bounded clock drift",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 8,
            name: "slow, lossy network to one node",
            fault: Fault::SlowLink,
            overlaps_allowed: false,
            breaks: "bounded message delay",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 9,
            name: "cluster: replica link cut, master killed, replica ack on",
            fault: Fault::ClusterFailover { ack: true },
            overlaps_allowed: false,
            breaks: "replication keeps up with the master",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: false,
        },
        Scenario {
            number: 10,
            name: "cluster: replica link cut, master killed, replica ack off",
            fault: Fault::ClusterFailover { ack: false },
            overlaps_allowed: true,
            breaks: "replication keeps up with the master",
            ttl: ms(2_000),
            hold: ms(20),
            writes: 3,
            hazard: true,
        },
        Scenario {
            number: 11,
            name: "semaphore: holders SIGSTOPped past the TTL, kill -9 + restart a node",
            fault: Fault::StopHolders { limit: 2 },
            overlaps_allowed: false,
            breaks: "bounded process pauses, node crashes",
            ttl: ms(1_000),
            // The holders pick 50-150 ms each (crate::holder); these two are unused.
            hold: ms(100),
            writes: 0,
            hazard: false,
        },
    ]
}

/// Node options a scenario needs.
pub fn node_builder(
    fault: Fault,
    ttl: Duration,
    index: usize,
    shim: &Option<(PathBuf, PathBuf)>,
) -> Builder {
    let mut builder = Server::builder();
    match fault {
        Fault::KillMinorityAof | Fault::StopHolders { .. } => {
            builder = builder
                .config("appendonly", "yes")
                .config("appendfsync", "always");
        }
        Fault::WipeMajorityQuarantined => {
            builder = builder.config("dlock.quarantine-ms", &ttl.as_millis().to_string());
        }
        Fault::ClockJump if index == 0 => {
            if let Some((library, offset_file)) = shim {
                builder = builder
                    .env("LD_PRELOAD", library)
                    .env("CLOCKSHIFT_FILE", offset_file);
            }
        }
        _ => {}
    }
    builder
}

/// What the fault thread works on.
pub struct Fixture {
    pub servers: Mutex<Vec<Server>>,
    pub link: Arc<Link>,
    /// The clock shim's offset file for node 0 (scenario 7).
    pub clock_offset: Option<PathBuf>,
}

/// Injects `fault` until `until`; runs on its own thread (the testkit calls block).
pub fn inject(fault: Fault, fixture: &Fixture, ttl: Duration, until: Instant) {
    let ms = Duration::from_millis;
    let mut round = 0usize;
    while Instant::now() + ms(100) < until {
        round += 1;
        match fault {
            // Cluster faults are injected by crate::cluster, on the cluster.
            Fault::None | Fault::PauseWorker | Fault::ClusterFailover { .. } => {
                std::thread::sleep(ms(200))
            }
            // One node at a time: a semaphore of limit 2 on 5 nodes needs 4 of them.
            Fault::KillMinorityAof | Fault::StopHolders { .. } => {
                let victim = round % NODES;
                std::thread::sleep(ms(300));
                with_servers(fixture, |s| s[victim].kill());
                std::thread::sleep(ms(200));
                with_servers(fixture, |s| s[victim].restart());
            }
            Fault::WipeMajority | Fault::WipeMajorityQuarantined => {
                // Mid-section: the holder is writing when its majority forgets it.
                let gap = if fault == Fault::WipeMajority {
                    700
                } else {
                    ttl.as_millis() as u64 + 800
                };
                std::thread::sleep(ms(gap));
                with_servers(fixture, |s| (0..3).for_each(|i| s[i].restart_empty()));
            }
            Fault::PauseNode => {
                std::thread::sleep(ms(300));
                with_servers(fixture, |s| s[round % NODES].pause());
                std::thread::sleep(ttl + ms(500));
                with_servers(fixture, |s| s[round % NODES].resume());
            }
            Fault::ClockJump => {
                std::thread::sleep(ms(1_000));
                if let Some(file) = &fixture.clock_offset {
                    // Each jump moves node 0's wall clock another 30 s ahead, never back.
                    let _ = std::fs::write(file, (round as u64 * 30_000).to_string());
                }
            }
            Fault::SlowLink => {
                let (delay, drop) = [(0, 0), (20, 0), (80, 0), (10, 5)][round % 4];
                fixture.link.delay_ms.store(delay, Relaxed);
                fixture.link.drop_percent.store(drop, Relaxed);
                std::thread::sleep(ms(700));
            }
        }
    }
    fixture.link.delay_ms.store(0, Relaxed);
    fixture.link.drop_percent.store(0, Relaxed);
}

fn with_servers(fixture: &Fixture, f: impl FnOnce(&mut Vec<Server>)) {
    let mut servers = fixture.servers.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut servers);
}
