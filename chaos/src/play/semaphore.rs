//! Scenario 11: holder processes (workloads/holder.rs) take permits of one semaphore on five nodes
//! while the fault thread kills -9 and restarts one node at a time (AOF `appendfsync always`, as
//! in scenario 2) and this thread SIGSTOPs one holder at a time for longer than the TTL.
//!
//! With limit k = 2 on N = 5 a permit needs q = 4 nodes (q > N·k/(k+1)), so one node down still
//! leaves progress and two would not: the fault thread never has more than one down.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::seq::IndexedRandom;
use rand::Rng;

use crate::checkers::figures::Figures;
use crate::checkers::permits;
use crate::fixture::faults::inject;
use crate::fixture::nodes::{node_builder, Fixture};
use crate::scenario::{Scenario, NODES};
use crate::workloads::holder::wall_ms;

/// Holder processes: twice the limit, so that permits are always contended.
const HOLDERS: usize = 4;

pub fn run(sc: &Scenario, duration: Duration, limit: u32) -> Figures {
    let servers: Vec<_> = (0..NODES)
        .map(|i| node_builder(sc.fault, sc.ttl, i, &None).start())
        .collect();
    let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    let fixture = Arc::new(Fixture {
        servers: Mutex::new(servers),
        link: Arc::default(),
        clock_offset: None,
    });
    let deadline = Instant::now() + duration;
    let faults = {
        let (fixture, fault, ttl) = (fixture.clone(), sc.fault, sc.ttl);
        std::thread::spawn(move || inject(fault, &fixture, ttl, deadline))
    };
    let logs = tempfile::tempdir().expect("temp dir");
    let mut holders = Holders::spawn(&urls, logs.path(), sc.ttl, limit, duration);
    let stops = holders.stop_one_at_a_time(sc.ttl, deadline);
    holders.wait(sc.ttl + Duration::from_secs(3));
    let _ = faults.join();
    let holds: Vec<permits::Hold> = holders
        .logs
        .iter()
        .flat_map(|log| permits::parse(&std::fs::read_to_string(log).unwrap_or_default()))
        .collect();
    let mut counted = permits::check(&holds, limit as usize);
    counted.stops = stops;
    Figures {
        grants: holds.len(),
        permits: Some(counted),
        ..Figures::default()
    }
}

/// The holder processes; dropping them kills those still running (a panic must not leave
/// stopped processes behind).
struct Holders {
    children: Vec<Child>,
    logs: Vec<PathBuf>,
}

impl Holders {
    fn spawn(urls: &[String], dir: &Path, ttl: Duration, limit: u32, run: Duration) -> Holders {
        let exe = std::env::current_exe().expect("the chaos binary's path");
        let until = wall_ms() + u64::try_from(run.as_millis()).unwrap_or(u64::MAX);
        let logs: Vec<PathBuf> = (0..HOLDERS)
            .map(|i| dir.join(format!("holder-{i}.log")))
            .collect();
        let children = logs
            .iter()
            .map(|log| {
                let mut cmd = Command::new(&exe);
                cmd.arg("holder")
                    .args(["--limit", &limit.to_string()])
                    .args(["--ttl-ms", &ttl.as_millis().to_string()])
                    .args(["--until-ms", &until.to_string()])
                    .arg("--log")
                    .arg(log);
                urls.iter().for_each(|url| {
                    cmd.args(["--node", url]);
                });
                cmd.stdin(Stdio::null()).stdout(Stdio::null());
                cmd.spawn().expect("spawn a holder")
            })
            .collect();
        Holders { children, logs }
    }

    /// Until `deadline`: every 0.2-0.6 s, stops one holder for TTL + 0.2-0.6 s, preferring one
    /// that holds a permit right now (its log's last line is a grant), so that most stops
    /// outlast a lease rather than a wait. Returns how many stops it made.
    fn stop_one_at_a_time(&self, ttl: Duration, deadline: Instant) -> usize {
        let ms = Duration::from_millis;
        let mut rng = rand::rng();
        let mut stops = 0;
        while Instant::now() + ttl + ms(1_000) < deadline {
            std::thread::sleep(ms(rng.random_range(200..=600)));
            let holding: Vec<usize> = (0..HOLDERS).filter(|&i| self.holding(i)).collect();
            let victim = match holding.choose(&mut rng) {
                Some(&i) => i,
                None => rng.random_range(0..HOLDERS),
            };
            self.signal(victim, Signal::SIGSTOP);
            std::thread::sleep(ttl + ms(rng.random_range(200..=600)));
            self.signal(victim, Signal::SIGCONT);
            stops += 1;
        }
        stops
    }

    fn holding(&self, i: usize) -> bool {
        let log = std::fs::read_to_string(&self.logs[i]).unwrap_or_default();
        log.lines().last().is_some_and(|l| l.starts_with("grant "))
    }

    fn signal(&self, i: usize, signal: Signal) {
        let Ok(pid) = i32::try_from(self.children[i].id()) else {
            return;
        };
        if let Err(e) = kill(Pid::from_raw(pid), signal) {
            eprintln!("chaos: {signal} to holder {i} failed: {e}");
        }
    }

    /// Lets the holders finish their last hold (they stop asking at the deadline); kills any
    /// still running after `grace`.
    fn wait(&mut self, grace: Duration) {
        let until = Instant::now() + grace;
        for child in &mut self.children {
            while Instant::now() < until && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for child in &mut self.children {
            // A stopped process dies of SIGKILL too; the wait reaps it.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
