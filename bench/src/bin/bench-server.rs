//! `make bench-server`: server CPU per call of the DLOCK commands next to what people run today,
//! on one server in one run, two ways (INFO commandstats usec_per_call, the time inside the
//! command; and the server process's whole CPU per call), and bytes per held lock. Ratios, not
//! absolute times: the machine is noisy, both sides share the noise.

use dlock_bench::{call_cost, cmd, median, CallCost};
use dlock_testkit::Server;
use redis::Connection;

const KEYS: usize = 100_000;
const ROUNDS: usize = 4;
const MEMORY_LOCKS: usize = 100_000;
/// What every dlock client sends: 128 random bits in lower-case hex.
const OWNER: &str = "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f";
/// Owners the memory table compares, by what sends them.
const MEMORY_OWNERS: [(&str, &str); 4] = [
    ("a client's owner, 32 hex digits", OWNER),
    (
        "a queued client's owner, `<hex>:<round>`",
        "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f:3",
    ),
    ("a UUID, 36 bytes", "6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f"),
    ("any 28 bytes", "owner-of-the-lock-0123456789"),
];
const TTL_MS: u64 = 3_600_000;

/// Compare-and-delete and compare-and-pexpire, the scripts every Redis lock library ships.
const RELEASE_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const EXTEND_SCRIPT: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/// One compared pair: our command, the alternative, their per-round costs, the goal ratio.
struct Row {
    ours: &'static str,
    theirs: &'static str,
    ours_cost: Vec<CallCost>,
    theirs_cost: Vec<CallCost>,
    goal: f64,
}

/// A command stat name and how to make its `i`-th call.
type Phase = (&'static str, Box<dyn Fn(usize) -> redis::Cmd>);

fn main() {
    // `DLOCK_BENCH_SECTION=guarded`: the guarded writes alone.
    if std::env::var("DLOCK_BENCH_SECTION").as_deref() == Ok("guarded") {
        return dlock_bench::guarded::print(&mut Server::start().conn());
    }
    for (setup, server) in [
        ("in memory (no AOF, no replica)", Server::start()),
        (
            "appendonly yes, appendfsync everysec (both sides propagate)",
            Server::builder()
                .config("appendonly", "yes")
                .config("appendfsync", "everysec")
                .start(),
        ),
    ] {
        let rows = cpu_rounds(&mut server.conn());
        print_cpu_table(setup, &rows);
    }
    print_module_tax();
    dlock_bench::guarded::print(&mut Server::start().conn());
    print_memory(&mut Server::start().conn());
    println!("\nReproduce: `make bench-server`");
}

/// What loading the module costs a plain `SET NX PX`: the same command on a server with the
/// module (whose keyspace-event subscription sees the `expire` event every `SET ... PX` fires)
/// and on one without, alternated.
fn print_module_tax() {
    let with = Server::start();
    let without = Server::builder().without_module().start();
    let ttl = TTL_MS.to_string();
    let set = move |i: usize| cmd(&["SET", &format!("k:{i}"), OWNER, "NX", "PX", &ttl]);
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        eprintln!("bench-server: module tax, round {}/{ROUNDS}", round + 1);
        for with_module in [round % 2 == 0, round % 2 != 0] {
            let (server, samples) = match with_module {
                true => (&with, &mut on),
                false => (&without, &mut off),
            };
            let mut c = server.conn();
            dlock_bench::flush(&mut c);
            samples.push(call_cost(&mut c, "set", KEYS, &set));
        }
    }
    println!(
        "\n`SET key owner NX PX` with and without the module loaded (same keys, alternated):\n"
    );
    println!("| measure | module loaded | no module | ratio |");
    println!("|---|---|---|---|");
    for (measure, of) in MEASURES {
        let (a, b) = (median_of(&on, of), median_of(&off, of));
        println!("| {measure} | {a:.2} | {b:.2} | **{:.2}x** |", a / b);
    }
}

/// One way of reading a call's cost.
type Measure = fn(&CallCost) -> f64;

/// The two ways a call's cost is read, by name.
const MEASURES: [(&str, Measure); 2] = [
    ("usec/call (commandstats)", |c| c.usec_per_call),
    ("server process CPU µs/call", |c| c.process_us_per_call),
];

fn median_of(costs: &[CallCost], of: Measure) -> f64 {
    median(costs.iter().map(of).collect())
}

fn row(ours: &'static str, theirs: &'static str, goal: f64) -> Row {
    Row {
        ours,
        theirs,
        ours_cost: Vec::new(),
        theirs_cost: Vec::new(),
        goal,
    }
}

/// The commands one side runs for each row, in row order (acquire, extend, release).
type Side = [Phase; 3];

fn sides(c: &mut Connection) -> [Side; 2] {
    let release_sha = load_script(c, RELEASE_SCRIPT);
    let extend_sha = load_script(c, EXTEND_SCRIPT);
    let ttl = TTL_MS.to_string();
    let ours: Side = [
        (
            "dlock.acquire",
            Box::new(move |i| cmd(&["DLOCK.ACQUIRE", &format!("k:{i}"), OWNER, &ttl])),
        ),
        (
            "dlock.extend",
            Box::new(|i| cmd(&["DLOCK.EXTEND", &format!("k:{i}"), OWNER, "60000"])),
        ),
        (
            "dlock.release",
            Box::new(|i| cmd(&["DLOCK.RELEASE", &format!("k:{i}"), OWNER])),
        ),
    ];
    let ttl = TTL_MS.to_string();
    let theirs: Side = [
        (
            "set",
            Box::new(move |i| cmd(&["SET", &format!("k:{i}"), OWNER, "NX", "PX", &ttl])),
        ),
        (
            "evalsha",
            Box::new(move |i| {
                cmd(&[
                    "EVALSHA",
                    &extend_sha,
                    "1",
                    &format!("k:{i}"),
                    OWNER,
                    "60000",
                ])
            }),
        ),
        (
            "evalsha",
            Box::new(move |i| cmd(&["EVALSHA", &release_sha, "1", &format!("k:{i}"), OWNER])),
        ),
    ];
    [ours, theirs]
}

/// Each side alone on a flushed keyspace (same key names, same sizes), the order of the sides
/// alternating from round to round, so neither profits from the other's leftovers or from
/// running first.
fn cpu_rounds(c: &mut Connection) -> Vec<Row> {
    let [ours, theirs] = sides(c);
    let mut rows = vec![
        row("DLOCK.ACQUIRE", "SET key owner NX PX", 1.0),
        row("DLOCK.EXTEND", "EVALSHA compare-and-pexpire", 0.6),
        row("DLOCK.RELEASE", "EVALSHA compare-and-delete", 0.6),
    ];
    for round in 0..ROUNDS {
        eprintln!(
            "bench-server: round {}/{ROUNDS} ({KEYS} keys per command)",
            round + 1
        );
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_ours in order {
            dlock_bench::flush(c);
            let side = if is_ours { &ours } else { &theirs };
            for (row, (stat, make)) in rows.iter_mut().zip(side.iter()) {
                let cost = call_cost(c, stat, KEYS, make.as_ref());
                if is_ours {
                    row.ours_cost.push(cost)
                } else {
                    row.theirs_cost.push(cost)
                }
            }
        }
    }
    rows
}

fn load_script(c: &mut Connection, body: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(body)
        .query(c)
        .expect("SCRIPT LOAD")
}

fn print_cpu_table(setup: &str, rows: &[Row]) {
    println!("\nServer CPU per call, {setup}, {KEYS} distinct keys, median of {ROUNDS} rounds, each side alone on a flushed keyspace, order alternated. usec/call: INFO commandstats (inside the command); process: the server's user + system CPU over the calls (parsing and replies included):\n");
    println!("| dlock | usec/call | process µs/call | alternative | usec/call | process µs/call | ratio (usec/call) | ratio (process) | goal (usec/call) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let [(a, b), (pa, pb)] =
            MEASURES.map(|(_, of)| (median_of(&r.ours_cost, of), median_of(&r.theirs_cost, of)));
        let verdict = if a / b <= r.goal { "met" } else { "missed" };
        println!(
            "| `{}` | {a:.2} | {pa:.2} | `{}` | {b:.2} | {pb:.2} | **{:.2}x** | **{:.2}x** | <= {}x: {verdict} |",
            r.ours,
            r.theirs,
            a / b,
            pa / pb,
            r.goal
        );
    }
}

fn used_memory(c: &mut Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

/// `used_memory` growth per key for `MEMORY_LOCKS` keys made by `make(i)`.
fn bytes_per_key(c: &mut Connection, make: &dyn Fn(usize) -> redis::Cmd) -> f64 {
    dlock_bench::flush(c);
    let before = used_memory(c);
    for chunk in (0..MEMORY_LOCKS).collect::<Vec<_>>().chunks(10_000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.add_command(make(i)).ignore();
        }
        pipe.exec(c).unwrap();
    }
    (used_memory(c) - before) as f64 / MEMORY_LOCKS as f64
}

fn print_memory(c: &mut Connection) {
    let ttl = TTL_MS.to_string();
    println!("\nMemory per held lock (INFO used_memory delta over {MEMORY_LOCKS} keys `lock:<n>`, TTL 1 h, each side on a flushed keyspace, best of two):\n");
    println!("| owner | dlock lock | `SET key owner PX` key | ratio | goal |");
    println!("|---|---|---|---|---|");
    for (what, owner) in MEMORY_OWNERS {
        eprintln!("bench-server: memory, {what}");
        let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
        for _ in 0..2 {
            let lock = |i| cmd(&["DLOCK.ACQUIRE", &format!("lock:{i}"), owner, &ttl]);
            ours = ours.min(bytes_per_key(c, &lock));
            let set = |i| cmd(&["SET", &format!("lock:{i}"), owner, "PX", &ttl]);
            theirs = theirs.min(bytes_per_key(c, &set));
        }
        let verdict = if ours / theirs <= 1.1 {
            "met"
        } else {
            "missed"
        };
        println!(
            "| {what} | {ours:.1} B | {theirs:.1} B | **{:.3}x** | <= 1.1x: {verdict} |",
            ours / theirs
        );
    }
}
