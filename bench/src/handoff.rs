//! `make bench-handoff-limit`: one lock, `WAITERS` waiters, holds of 0 ms (each new holder
//! releases as soon as it is granted, then asks again). Drives each contender for a warm-up and
//! a measured window and reads the nodes' INFO commandstats over the window.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use dlock_testkit::Server;
use futures::future::join_all;
use redis::Connection;

use crate::contenders::Contender;
use crate::serverstats::{command_stats, cpu_seconds, reset_stats, CommandStat};
use crate::wakeups::{PythonRedisLock, RawDlock, RedissonPubSub, Subscriber, TightPolling, Waiter};

pub const WAITERS: usize = 32;
const WARMUP: Duration = Duration::from_millis(500);
const TTL: Duration = Duration::from_secs(10);

/// The contenders, by how their waiters wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// dlock-client's `lock()` (queue mode, fencing on: the defaults).
    DlockClient,
    /// `DLOCK.ACQUIRE ... WAIT` + `DLOCK.RELEASE` on dedicated connections.
    DlockRaw,
    PythonRedisLock,
    Redisson,
    /// The rslock crate: SET NX PX on a majority, 0-50 ms random pause between tries.
    Rslock,
    TightPolling,
}

impl Peer {
    pub fn name(self) -> &'static str {
        match self {
            Peer::DlockClient => "dlock-client `lock()` (queue, fencing on)",
            Peer::DlockRaw => "dlock raw `ACQUIRE ... WAIT` + `RELEASE` (the floor)",
            Peer::PythonRedisLock => "python-redis-lock's BLPOP wake-up (re-implemented)",
            Peer::Redisson => "Redisson's pub/sub wake-up (re-implemented)",
            Peer::Rslock => "rslock (polling, 0-50 ms pause)",
            Peer::TightPolling => "polling `SET NX PX`, no pause",
        }
    }

    pub fn is_dlock(self) -> bool {
        matches!(self, Peer::DlockClient | Peer::DlockRaw)
    }

    /// Commands the scripts run (INFO commandstats counts them too), and those counted both
    /// inside a script and as a client's command, one of each per handoff (Redisson's `DEL`: of
    /// the lock inside the unlock script, of the unlock latch by the client).
    fn script_commands(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Peer::DlockClient | Peer::DlockRaw => (&[], &[]),
            Peer::PythonRedisLock => (&["get", "del", "lpush", "pexpire"], &[]),
            Peer::Redisson => (
                &[
                    "exists", "hexists", "hincrby", "pexpire", "pttl", "get", "set", "publish",
                ],
                &["del"],
            ),
            Peer::Rslock | Peer::TightPolling => (&["get", "del"], &[]),
        }
    }

    /// Per handoff per node: the clients' commands by name, scripts' own commands left out.
    fn client_commands(self, stats: &BTreeMap<String, CommandStat>) -> BTreeMap<String, u64> {
        let (inside, shared) = self.script_commands();
        stats
            .iter()
            .filter(|(name, _)| !matches!(name.as_str(), "info" | "config"))
            .filter(|(name, _)| !inside.contains(&name.as_str()))
            .map(|(name, s)| {
                let calls = if shared.contains(&name.as_str()) {
                    s.calls / 2
                } else {
                    s.calls
                };
                (name.clone(), calls)
            })
            .collect()
    }
}

/// Grants as the waiters see them. A grant is a handoff when it goes to another waiter than the
/// previous holder: with 0 ms holds a lock that lets anyone barge in is mostly taken straight
/// back by the client that just released it. Grants are serialized by the lock itself.
pub struct Grants {
    grants: AtomicU64,
    handoffs: AtomicU64,
    last: AtomicUsize,
}

impl Grants {
    fn new() -> Grants {
        Grants {
            grants: AtomicU64::new(0),
            handoffs: AtomicU64::new(0),
            last: AtomicUsize::new(usize::MAX),
        }
    }

    fn granted(&self, waiter: usize) {
        self.grants.fetch_add(1, Relaxed);
        if self.last.swap(waiter, Relaxed) != waiter {
            self.handoffs.fetch_add(1, Relaxed);
        }
    }

    fn now(&self) -> (u64, u64) {
        (self.grants.load(Relaxed), self.handoffs.load(Relaxed))
    }
}

/// One measured window.
pub struct Window {
    pub grants: u64,
    pub handoffs: u64,
    pub seconds: f64,
    /// The nodes' CPU seconds (user + system), summed.
    pub server_cpu: f64,
    /// The clients' commands over the window, summed over the nodes, by name.
    pub commands: BTreeMap<String, u64>,
    /// PING round trip p50 on the first node during the window, µs.
    pub ping_under_load_us: f64,
}

/// Runs `peer` on `servers` (1 node: every peer; more: majority lockers) with a fresh `key`.
pub fn measure(peer: Peer, servers: &[&Server], key: &str, window: Duration) -> Window {
    let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    match peer {
        Peer::DlockClient | Peer::Rslock => in_runtime(peer, &urls, servers, key, window),
        _ => {
            assert_eq!(servers.len(), 1, "{} is single-node", peer.name());
            let make = |i: usize| waiter(peer, servers[0], key, i);
            in_threads(peer, make, servers, window)
        }
    }
}

fn waiter(peer: Peer, server: &Server, key: &str, i: usize) -> Box<dyn Waiter> {
    let (conn, key, owner) = (server.conn(), key.to_string(), format!("waiter-{i}"));
    match peer {
        Peer::DlockRaw => Box::new(RawDlock { conn, key, owner }),
        Peer::PythonRedisLock => Box::new(PythonRedisLock {
            conn,
            name: key,
            id: format!("{i:024}"), // b64encode(urandom(18)): 24 characters
        }),
        Peer::Redisson => Box::new(RedissonPubSub {
            conn,
            subscriber: Subscriber::connect(server.port()),
            name: key,
            holder: format!("6f1c2a9e-3b7d-4c5e-9a8f-{i:012}:1"),
            waiter: i,
            unlocks: 0,
        }),
        Peer::TightPolling => Box::new(TightPolling { conn, key, owner }),
        Peer::DlockClient | Peer::Rslock => unreachable!("run in the Tokio runtime"),
    }
}

/// `WAITERS` threads, one blocking waiter each, until the window is over.
fn in_threads(
    peer: Peer,
    make: impl Fn(usize) -> Box<dyn Waiter>,
    servers: &[&Server],
    window: Duration,
) -> Window {
    let (granted, stop) = (Grants::new(), AtomicBool::new(false));
    let waiters: Vec<Box<dyn Waiter>> = (0..WAITERS).map(make).collect();
    thread::scope(|scope| {
        for (i, mut waiter) in waiters.into_iter().enumerate() {
            let (granted, stop) = (&granted, &stop);
            scope.spawn(move || {
                while !stop.load(Relaxed) {
                    waiter.acquire();
                    granted.granted(i);
                    waiter.release();
                }
            });
        }
        let measured = observe(peer, servers, &granted, window);
        stop.store(true, Relaxed);
        measured
    })
}

/// `WAITERS` Tokio tasks sharing one lock manager (dlock-client or rslock), on 2 worker
/// threads, until the window is over.
fn in_runtime(
    peer: Peer,
    urls: &[String],
    servers: &[&Server],
    key: &str,
    window: Duration,
) -> Window {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let entered = runtime.enter();
    let contender = match peer {
        Peer::DlockClient => Contender::dlock(urls, true),
        _ => Contender::rslock(urls),
    };
    drop(entered);
    let (granted, stop) = (Grants::new(), AtomicBool::new(false));
    let runtime = &runtime;
    thread::scope(|scope| {
        let (granted, stop, contender) = (&granted, &stop, &contender);
        let tasks = scope.spawn(move || {
            let tasks = (0..WAITERS).map(|i| async move {
                while !stop.load(Relaxed) {
                    cycle(contender, key, granted, i).await;
                }
            });
            runtime.block_on(join_all(tasks));
        });
        let measured = observe(peer, servers, granted, window);
        stop.store(true, Relaxed);
        tasks.join().expect("the waiting tasks");
        measured
    })
}

/// One grant and its release through a lock manager, counted at the grant.
async fn cycle(contender: &Contender, key: &str, granted: &Grants, waiter: usize) {
    match contender {
        Contender::Dlock(m) => {
            let guard = m
                .lock(key, TTL, Duration::from_secs(60))
                .await
                .expect("dlock-client lock()");
            granted.granted(waiter);
            guard.release().await.expect("dlock-client release");
        }
        Contender::Rslock(m) => {
            let lock = m
                .acquire_no_guard(key.as_bytes(), TTL)
                .await
                .expect("rslock acquire");
            granted.granted(waiter);
            m.unlock(&lock).await;
        }
        _ => unreachable!("only lock managers run in the runtime"),
    }
}

/// After the warm-up, one window: grants counted by the waiters, commands by the nodes.
fn observe(peer: Peer, servers: &[&Server], granted: &Grants, window: Duration) -> Window {
    let mut conns: Vec<Connection> = servers.iter().map(|s| s.conn()).collect();
    let server_cpu = |conns: &mut [Connection]| -> f64 { conns.iter_mut().map(cpu_seconds).sum() };
    thread::sleep(WARMUP);
    conns.iter_mut().for_each(reset_stats);
    let (cpu_before, before, started) = (server_cpu(&mut conns), granted.now(), Instant::now());
    let pings = pings_during(&mut conns[0], window);
    let after = granted.now();
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu = server_cpu(&mut conns) - cpu_before;
    let mut commands = BTreeMap::new();
    for c in &mut conns {
        for (name, calls) in peer.client_commands(&command_stats(c)) {
            *commands.entry(name).or_insert(0) += calls;
        }
    }
    if let Some(ping) = commands.get_mut("ping") {
        *ping -= pings.len() as u64; // the bench's own
    }
    commands.retain(|_, calls| *calls > 0);
    Window {
        grants: after.0 - before.0,
        handoffs: after.1 - before.1,
        seconds,
        server_cpu,
        commands,
        ping_under_load_us: crate::median(pings),
    }
}

/// One PING a millisecond on `c` for `window` (light enough not to slow the contender down):
/// the round trips in µs, as the contender's own clients see the node meanwhile.
fn pings_during(c: &mut Connection, window: Duration) -> Vec<f64> {
    let (started, mut samples) = (Instant::now(), Vec::new());
    while started.elapsed() < window {
        let t = Instant::now();
        redis::cmd("PING").exec(c).expect("PING");
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        thread::sleep(Duration::from_millis(1));
    }
    samples
}

/// Sequential PINGs on one connection: the round trip's p50 in µs.
pub fn ping_rtt_us(server: &Server, pings: usize) -> f64 {
    let mut c = server.conn();
    let samples = (0..pings)
        .map(|_| {
            let t = Instant::now();
            redis::cmd("PING").exec(&mut c).expect("PING");
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    crate::median(samples)
}
