//! `make bench-shared`: what shared locks and semaphores cost the server, next to the exclusive
//! lock and a plain `SET NX PX`, and how fast a writer's release reaches 16 queued readers.
//! Ratios from one run on one server, the order of the contenders alternated, each on a flushed
//! keyspace (the machine is noisy; both sides share the noise).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use dlock_bench::{call_cost, cmd, median, percentile};
use dlock_testkit::Server;
use redis::Connection;

const KEYS: usize = 100_000;
const ROUNDS: usize = 4;
const OWNER: &str = "6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f"; // 36 bytes, a UUID
const READERS: usize = 16;
const HANDOFFS: usize = 30;

/// One contender: its name, the command stat it shows under, how its `i`-th call is made.
type Contender = (&'static str, &'static str, fn(usize) -> redis::Cmd);

fn contenders() -> [Contender; 4] {
    [
        ("`SET key owner NX PX`", "set", |i| {
            cmd(&["SET", &format!("k:{i}"), OWNER, "NX", "PX", "3600000"])
        }),
        ("`DLOCK.ACQUIRE` (exclusive)", "dlock.acquire", |i| {
            cmd(&["DLOCK.ACQUIRE", &format!("k:{i}"), OWNER, "3600000"])
        }),
        ("`DLOCK.ACQUIRE ... SHARED`", "dlock.acquire", |i| {
            cmd(&[
                "DLOCK.ACQUIRE",
                &format!("k:{i}"),
                OWNER,
                "3600000",
                "SHARED",
            ])
        }),
        ("`DLOCK.ACQUIRE ... LIMIT 4`", "dlock.acquire", |i| {
            let key = format!("k:{i}");
            cmd(&["DLOCK.ACQUIRE", &key, OWNER, "3600000", "LIMIT", "4"])
        }),
    ]
}

fn main() {
    let server = Server::start();
    let mut c = server.conn();
    acquire_cost(&mut c);
    drop(c);
    handoff_to_readers(&server);
    println!("\nReproduce: `make bench-shared`");
}

/// usec_per_call of each contender on a fresh key per call; order rotated every round.
fn acquire_cost(c: &mut Connection) {
    let all = contenders();
    let mut samples = vec![Vec::new(); all.len()];
    for round in 0..ROUNDS {
        eprintln!(
            "bench-shared: round {}/{ROUNDS} ({KEYS} keys each)",
            round + 1
        );
        for k in 0..all.len() {
            let at = (k + round) % all.len();
            dlock_bench::flush(c);
            let (_, stat, make) = all[at];
            samples[at].push(call_cost(c, stat, KEYS, &make).usec_per_call);
        }
    }
    let set = median(samples[0].clone());
    println!("\nServer CPU per call of a grant on a free key (INFO commandstats usec_per_call), {KEYS} distinct keys, median of {ROUNDS} rounds, order rotated, each on a flushed keyspace:\n");
    println!("| command | usec/call | vs SET NX PX |");
    println!("|---|---|---|");
    for (k, (name, _, _)) in all.iter().enumerate() {
        let us = median(samples[k].clone());
        println!("| {name} | {us:.2} | **{:.2}x** |", us / set);
    }
}

/// A writer holds `doc`; 16 readers queue (`SHARED WAIT`); the writer releases. Measures the
/// time from the RELEASE leaving to the last reader's grant arriving, and the commands the
/// server ran for the 16 grants (its own RELEASE plus the readers' ACQUIREs).
fn handoff_to_readers(server: &Server) {
    let mut times = Vec::new();
    let mut per_grant = Vec::new();
    let mut c = server.conn();
    let mut readers: Vec<Connection> = (0..READERS).map(|_| server.conn()).collect();
    for round in 0..HANDOFFS {
        dlock_bench::flush(&mut c);
        cmd(&["DLOCK.ACQUIRE", "doc", "writer", "60000"])
            .exec(&mut c)
            .expect("writer");
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .exec(&mut c)
            .expect("RESETSTAT");
        let (elapsed, calls) = one_handoff(&mut c, &mut readers, round);
        times.push(elapsed.as_secs_f64() * 1e6);
        per_grant.push(calls as f64 / READERS as f64);
    }
    let p50 = percentile(times.clone(), 50.0);
    let p99 = percentile(times, 99.0);
    println!("\nA writer's release handed to {READERS} queued readers (`SHARED WAIT`), one node, {HANDOFFS} runs:\n");
    println!("| time from RELEASE sent to the last reader's grant received, p50 | p99 | server commands per grant (the readers' ACQUIREs + the RELEASE, / {READERS}) |");
    println!("|---|---|---|");
    println!("| {p50:.0} µs | {p99:.0} µs | {:.2} |", median(per_grant));
}

/// One handoff: the readers queue, the writer releases; (time to the last grant, commands).
fn one_handoff(c: &mut Connection, readers: &mut [Connection], round: usize) -> (Duration, u64) {
    let barrier = Arc::new(Barrier::new(READERS + 1));
    let (elapsed, calls) = thread::scope(|scope| {
        let waits: Vec<_> = readers
            .iter_mut()
            .enumerate()
            .map(|(i, conn)| {
                let barrier = barrier.clone();
                scope.spawn(move || {
                    let owner = format!("reader-{round}-{i}");
                    let ask = cmd(&[
                        "DLOCK.ACQUIRE",
                        "doc",
                        &owner,
                        "60000",
                        "SHARED",
                        "WAIT",
                        "10000",
                    ]);
                    barrier.wait();
                    let token: Option<i64> = ask.query(conn).expect("reader");
                    assert!(token.is_some(), "a reader timed out");
                    Instant::now()
                })
            })
            .collect();
        barrier.wait();
        while waiters(c) < READERS {
            thread::sleep(Duration::from_micros(200));
        }
        let sent = Instant::now();
        let released: i64 = cmd(&["DLOCK.RELEASE", "doc", "writer"])
            .query(c)
            .expect("release");
        assert_eq!(released, 1);
        let last = waits.into_iter().map(|w| w.join().expect("reader")).max();
        // Since RESETSTAT: the readers' ACQUIREs (however Redis counts a blocked call) and the
        // RELEASE; the bench's own INFO, WAITERS and CONFIG are left out.
        (last.map_or(Duration::ZERO, |t| t - sent), total_calls(c))
    });
    (elapsed, calls)
}

fn waiters(c: &mut Connection) -> usize {
    let queue: Vec<redis::Value> = cmd(&["DLOCK.WAITERS", "doc"]).query(c).expect("WAITERS");
    queue.len()
}

/// Every command call the server counted since the last RESETSTAT, INFO and WAITERS excluded.
fn total_calls(c: &mut Connection) -> u64 {
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(c)
        .expect("INFO");
    stats
        .lines()
        .filter(|l| !l.starts_with("cmdstat_info:") && !l.starts_with("cmdstat_dlock.waiters:"))
        .filter(|l| !l.starts_with("cmdstat_config"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}
