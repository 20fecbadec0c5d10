//! `make bench-capacity`: how many acquire+release cycles one Redis process sustains at
//! saturation, dlock's commands next to the scripts the other Redis locks run, and above all how
//! many cycles each gets out of one second of the server's CPU (the load generator shares the
//! machine's 2 cores with redis-server, so cycles/s alone says as much about the machine).
//! Ratios from one run on one server, the order of the contenders rotated every round, each on
//! a flushed keyspace.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use dlock_bench::rawresp::{Batch, Expect, RawConnection};
use dlock_bench::serverstats::{command_stats, cpu_seconds, reset_stats, CommandStat};
use dlock_bench::{median, WindowPlan};
use dlock_testkit::Server;
use redis::Connection;

/// Connections, each pipelining batches of this many cycles on distinct keys.
const CONNECTIONS: usize = 8;
const CYCLES_PER_BATCH: usize = 100;
const WARMUP: Duration = Duration::from_millis(500);
const OWNER: &str = "6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f"; // 36 bytes, a UUID
/// Redisson's hash field: the client's UUID and the thread id.
const REDISSON_HOLDER: &str = "6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f:1";
/// Redisson's lock watchdog lease (30 s) is its default TTL; the others get the same.
const TTL_MS: &str = "30000";

/// Compare-and-delete, as redsync, node-redlock and rslock release.
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
/// Redisson's lock and unlock scripts, verbatim (bench/src/redisson.rs).
use dlock_bench::redisson::{
    LOCK as REDISSON_LOCK, UNLOCK as REDISSON_UNLOCK, UNLOCK_3_23 as REDISSON_UNLOCK_3_23,
};

/// The SHA1s of the scripts, loaded once (FLUSHALL keeps the script cache).
struct Scripts {
    compare_and_delete: String,
    redisson_lock: String,
    redisson_unlock: String,
    redisson_unlock_3_23: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Contender {
    Dlock,
    SetNxScript,
    Redisson,
    Redisson323,
}

const CONTENDERS: [Contender; 4] = [
    Contender::Dlock,
    Contender::SetNxScript,
    Contender::Redisson,
    Contender::Redisson323,
];

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Dlock => "dlock: `DLOCK.ACQUIRE` + `DLOCK.RELEASE`",
            Contender::SetNxScript => {
                "`SET NX PX` + `EVALSHA` compare-and-delete (redsync, node-redlock, rslock)"
            }
            Contender::Redisson => {
                "Redisson >= 3.24: lock script + unlock script (PUBLISH, unlock latch) + `DEL` latch"
            }
            Contender::Redisson323 => "Redisson <= 3.23: lock script + unlock script (PUBLISH)",
        }
    }

    /// Appends one acquisition of `key`.
    fn acquire(self, key: &str, s: &Scripts, b: &mut Batch) {
        match self {
            Contender::Dlock => b.push(&["DLOCK.ACQUIRE", key, OWNER, TTL_MS], Expect::Token),
            Contender::SetNxScript => b.push(&["SET", key, OWNER, "NX", "PX", TTL_MS], Expect::Ok),
            Contender::Redisson | Contender::Redisson323 => b.push(
                &[
                    "EVALSHA",
                    &s.redisson_lock,
                    "1",
                    key,
                    TTL_MS,
                    REDISSON_HOLDER,
                ],
                Expect::Nil,
            ),
        }
    }

    /// Appends the release of `key`; `request` names Redisson's unlock latch.
    fn release(self, key: &str, request: &str, s: &Scripts, b: &mut Batch) {
        let channel = format!("redisson_lock__channel:{{{key}}}");
        let latch = format!("redisson_unlock_latch:{{{key}}}:{request}");
        match self {
            Contender::Dlock => b.push(&["DLOCK.RELEASE", key, OWNER], Expect::One),
            Contender::SetNxScript => b.push(
                &["EVALSHA", &s.compare_and_delete, "1", key, OWNER],
                Expect::One,
            ),
            Contender::Redisson => {
                let (sha, lease) = (&s.redisson_unlock, TTL_MS);
                let keys = [key, channel.as_str(), latch.as_str()];
                let argv = ["0", lease, REDISSON_HOLDER, "publish", "20000"];
                let args: Vec<&str> = ["EVALSHA", sha, "3"]
                    .into_iter()
                    .chain(keys)
                    .chain(argv)
                    .collect();
                b.push(&args, Expect::One);
                // unlockInnerAsync then deletes the latch once the script has answered.
                b.push(&["DEL", &latch], Expect::One);
            }
            Contender::Redisson323 => {
                let sha = &s.redisson_unlock_3_23;
                let (lease, holder) = (TTL_MS, REDISSON_HOLDER);
                let args = [
                    "EVALSHA", sha, "2", key, &channel, "0", lease, holder, "publish",
                ];
                b.push(&args, Expect::One);
            }
        }
    }

    /// Commands the client sends per cycle.
    fn commands(self) -> usize {
        if self == Contender::Redisson {
            3
        } else {
            2
        }
    }

    /// The command counted exactly `n` times per cycle at the top level (commands a script
    /// runs are counted under their own names too, so `DEL` and `SET` may not be used).
    fn counted(self) -> (&'static str, u64) {
        match self {
            Contender::Dlock => ("dlock.acquire", 1),
            Contender::SetNxScript => ("set", 1),
            Contender::Redisson | Contender::Redisson323 => ("evalsha", 2),
        }
    }

    /// INFO commandstats µs of the commands the client sent (a script's µs include the
    /// commands it runs). Redisson's latch `DEL` shares `cmdstat_del` with the script's own
    /// `DEL` of the lock, one each per cycle: half of it is the latch's.
    fn client_usec(self, stats: &std::collections::BTreeMap<String, CommandStat>) -> f64 {
        let usec = |name: &str| stats.get(name).map_or(0.0, |s| s.usec as f64);
        match self {
            Contender::Dlock => usec("dlock.acquire") + usec("dlock.release"),
            Contender::SetNxScript => usec("set") + usec("evalsha"),
            Contender::Redisson => usec("evalsha") + usec("del") / 2.0,
            Contender::Redisson323 => usec("evalsha"),
        }
    }

    /// One connection's batch: `CYCLES_PER_BATCH` acquisitions of distinct keys, then their
    /// releases.
    fn batch(self, connection: usize, s: &Scripts) -> Batch {
        let keys: Vec<String> = (0..CYCLES_PER_BATCH)
            .map(|i| format!("cap:{connection}:{i}"))
            .collect();
        let mut b = Batch::default();
        for key in &keys {
            self.acquire(key, s, &mut b);
        }
        for (i, key) in keys.iter().enumerate() {
            let request = format!("{connection:08x}{i:024x}"); // 16 random bytes in Redisson
            self.release(key, &request, s, &mut b);
        }
        b
    }
}

/// One contender's measurement over one saturated window.
#[derive(Clone, Copy)]
struct Sample {
    cycles_per_s: f64,
    cycles_per_cpu_s: f64,
    /// Server CPU seconds per wall-clock second (1.0 = one core busy).
    cpu_share: f64,
    usec_per_cycle: f64,
}

fn main() {
    let plan = WindowPlan::from_args(5, 2);
    let server = Server::start();
    let mut control = server.conn();
    let scripts = load_scripts(&mut control);
    let samples = rounds(&plan, &server, &mut control, &scripts);
    print_tables(&plan, &samples);
    against_a_plain_server(&plan, &server, &mut control, &scripts);
    println!("\nReproduce: `make bench-capacity`");
}

/// The script pair where a peer really runs it: a server without the module, which otherwise
/// answers every `SET ... PX` and `DEL` with its keyspace-event callback. Alternated with dlock
/// on its own server, one window each per round.
fn against_a_plain_server(plan: &WindowPlan, server: &Server, c: &mut Connection, s: &Scripts) {
    let plain = Server::builder().without_module().start();
    let mut p = plain.conn();
    let plain_scripts = load_scripts(&mut p);
    let mut ratios = Vec::new();
    for round in 0..plan.rounds {
        let mut ours = || {
            dlock_bench::flush(c);
            saturate(plan, server, c, Contender::Dlock, s).cycles_per_cpu_s
        };
        let mut theirs = || {
            dlock_bench::flush(&mut p);
            saturate(plan, &plain, &mut p, Contender::SetNxScript, &plain_scripts).cycles_per_cpu_s
        };
        let (a, b) = if round % 2 == 0 {
            let a = ours();
            (a, theirs())
        } else {
            let b = theirs();
            (ours(), b)
        };
        eprintln!(
            "bench-capacity: plain server, round {}/{}: {a:.0} / {b:.0} cycles per server CPU-s",
            round + 1,
            plan.rounds
        );
        ratios.push(a / b);
    }
    let r = median(ratios);
    let verdict = if r >= 2.0 { "met" } else { "missed" };
    println!("\nThe same pair on a server without the module (where a peer runs it), alternated with dlock:\n");
    println!("| goal | measured | result |");
    println!("|---|---|---|");
    println!(
        "| cycles per server CPU-second >= 2x {} on a plain server | {r:.2}x | {verdict} |",
        Contender::SetNxScript.name()
    );
}

fn load_scripts(c: &mut Connection) -> Scripts {
    let mut load = |body: &str| -> String {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(body)
            .query(c)
            .expect("SCRIPT LOAD")
    };
    Scripts {
        compare_and_delete: load(COMPARE_AND_DELETE),
        redisson_lock: load(REDISSON_LOCK),
        redisson_unlock: load(REDISSON_UNLOCK),
        redisson_unlock_3_23: load(REDISSON_UNLOCK_3_23),
    }
}

/// Every contender once per round, alone on a flushed keyspace, the order rotated each round.
fn rounds(plan: &WindowPlan, server: &Server, c: &mut Connection, s: &Scripts) -> Vec<Vec<Sample>> {
    let mut samples = vec![Vec::new(); CONTENDERS.len()];
    for round in 0..plan.rounds {
        for k in 0..CONTENDERS.len() {
            let at = (k + round) % CONTENDERS.len();
            dlock_bench::flush(c);
            let sample = saturate(plan, server, c, CONTENDERS[at], s);
            eprintln!(
                "bench-capacity: round {}/{} {}: {:.0} cycles/s, {:.0} per server CPU-s",
                round + 1,
                plan.rounds,
                CONTENDERS[at].name(),
                sample.cycles_per_s,
                sample.cycles_per_cpu_s
            );
            samples[at].push(sample);
        }
    }
    samples
}

/// `CONNECTIONS` connections run `who`'s batches as fast as the server answers; after a
/// warm-up, one window is measured from the server's own counters.
fn saturate(
    plan: &WindowPlan,
    server: &Server,
    c: &mut Connection,
    who: Contender,
    s: &Scripts,
) -> Sample {
    let batches: Vec<Batch> = (0..CONNECTIONS).map(|i| who.batch(i, s)).collect();
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        for batch in &batches {
            let stop = &stop;
            scope.spawn(move || {
                let mut conn = RawConnection::connect(server.port());
                while !stop.load(Relaxed) {
                    conn.run(batch);
                }
            });
        }
        thread::sleep(WARMUP);
        reset_stats(c);
        let (cpu_before, started) = (cpu_seconds(c), Instant::now());
        thread::sleep(plan.window);
        let cpu = cpu_seconds(c) - cpu_before;
        let stats = command_stats(c);
        let elapsed = started.elapsed().as_secs_f64();
        stop.store(true, Relaxed);
        let (stat, per_cycle) = who.counted();
        let calls = stats.get(stat).map_or(0, |s| s.calls);
        let cycles = (calls / per_cycle) as f64;
        Sample {
            cycles_per_s: cycles / elapsed,
            cycles_per_cpu_s: cycles / cpu,
            cpu_share: cpu / elapsed,
            usec_per_cycle: who.client_usec(&stats) / cycles,
        }
    })
}

/// dlock's figure over `who`'s, round by round (each round's samples ran minutes apart at
/// most), then the median.
fn ratio(samples: &[Vec<Sample>], who: usize, figure: fn(&Sample) -> f64) -> f64 {
    let ours = &samples[0];
    let pairs = ours.iter().zip(&samples[who]);
    median(pairs.map(|(a, b)| figure(a) / figure(b)).collect())
}

fn print_tables(plan: &WindowPlan, samples: &[Vec<Sample>]) {
    let med =
        |k: usize, figure: fn(&Sample) -> f64| median(samples[k].iter().map(figure).collect());
    println!(
        "\nAcquire+release cycles at saturation, one redis-server: {CONNECTIONS} connections, each pipelining batches of {CYCLES_PER_BATCH} distinct keys (acquire all, then release all); {}s windows after a {}ms warm-up; median of {} rounds, order rotated, each on a flushed keyspace. The load generator runs on the same 2 cores:\n",
        plan.window.as_secs(),
        WARMUP.as_millis(),
        plan.rounds
    );
    println!("| contender | commands per cycle | cycles/s | server CPU busy | cycles per server CPU-second | commandstats µs per cycle | dlock's cycles per CPU-s, ratio | dlock's cycles/s, ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    for (k, who) in CONTENDERS.iter().enumerate() {
        println!(
            "| {} | {} | {:.0} | {:.0}% | {:.0} | {:.2} | **{:.2}x** | {:.2}x |",
            who.name(),
            who.commands(),
            med(k, |s| s.cycles_per_s),
            med(k, |s| s.cpu_share) * 100.0,
            med(k, |s| s.cycles_per_cpu_s),
            med(k, |s| s.usec_per_cycle),
            ratio(samples, k, |s| s.cycles_per_cpu_s),
            ratio(samples, k, |s| s.cycles_per_s),
        );
    }
    println!("\n| goal | measured | result |");
    println!("|---|---|---|");
    for (k, who) in CONTENDERS.iter().enumerate().skip(1) {
        let r = ratio(samples, k, |s| s.cycles_per_cpu_s);
        let verdict = if r >= 2.0 { "met" } else { "missed" };
        println!(
            "| cycles per server CPU-second >= 2x {} | {r:.2}x | {verdict} |",
            who.name()
        );
    }
}
