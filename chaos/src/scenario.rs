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

pub fn all() -> Vec<Scenario> {
    let ms = Duration::from_millis;
    let s = |number, name, fault, overlaps_allowed, breaks, ttl, hold| Scenario {
        number,
        name,
        fault,
        overlaps_allowed,
        breaks,
        ttl: ms(ttl),
        hold: ms(hold),
        writes: 3,
        hazard: false,
    };
    let mut all = vec![
        s(
            1,
            "no faults",
            Fault::None,
            false,
            "nothing (baseline)",
            2_000,
            20,
        ),
        s(
            2,
            "kill -9 + restart a minority, AOF always",
            Fault::KillMinorityAof,
            false,
            "node crashes (with durable state)",
            2_000,
            20,
        ),
        s(
            3,
            "kill -9 + wipe a majority, no quarantine",
            Fault::WipeMajority,
            true,
            "nodes keep their grants across crashes",
            2_000,
            300,
        ),
        s(
            4,
            "kill -9 + wipe a majority, quarantine = TTL",
            Fault::WipeMajorityQuarantined,
            false,
            "nodes keep their grants (quarantine restores it)",
            2_000,
            300,
        ),
        s(
            5,
            "worker paused past its TTL (GC pause)",
            Fault::PauseWorker,
            true,
            "bounded process pauses",
            1_000,
            30,
        ),
        s(
            6,
            "node paused (SIGSTOP) longer than the TTL",
            Fault::PauseNode,
            false,
            "nodes answer promptly",
            1_000,
            20,
        ),
        s(
            7,
            "wall clock jumps forward on one node",
            Fault::ClockJump,
            true,
            "bounded clock drift",
            2_000,
            20,
        ),
        s(
            8,
            "slow, lossy network to one node",
            Fault::SlowLink,
            false,
            "bounded message delay",
            2_000,
            20,
        ),
        s(
            9,
            "cluster: replica link cut, master killed, replica ack on",
            Fault::ClusterFailover { ack: true },
            false,
            "replication keeps up with the master",
            2_000,
            20,
        ),
        s(
            10,
            "cluster: replica link cut, master killed, replica ack off",
            Fault::ClusterFailover { ack: false },
            true,
            "replication keeps up with the master",
            2_000,
            20,
        ),
    ];
    all[9].hazard = true;
    all
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
        Fault::KillMinorityAof => {
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
            Fault::KillMinorityAof => {
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
