//! What a set costs one node (`make bench-multi`, docs/bench/multi.md): server time per
//! 5-key `DLOCK.ACQUIREALL` + `DLOCK.RELEASEALL` against a 1-key `DLOCK.ACQUIRE` +
//! `DLOCK.RELEASE` (INFO commandstats, uncontended), and PING round trips while 16-key sets
//! churn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Connection;

use crate::multi::{Record, Spec};
use crate::multi_run::{self, Taker};
use crate::serverstats::{command_stats, reset_stats};
use crate::{cmd, median, percentile};

/// Server µs per call of each command of one cycle kind.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    pub acquire_us: f64,
    pub release_us: f64,
}

impl Cost {
    pub fn cycle_us(&self) -> f64 {
        self.acquire_us + self.release_us
    }
}

/// The 5-key cycle's cost and the 1-key cycle's, `rounds` rounds (order alternating) of
/// `cycles` cycles each, pipelined 500 at a time on a flushed keyspace.
pub fn grant_cost(c: &mut Connection, rounds: usize, cycles: usize) -> (Vec<Cost>, Vec<Cost>) {
    let (mut sets, mut singles) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            sets.push(cycles_cost(c, 5, cycles));
            singles.push(cycles_cost(c, 1, cycles));
        } else {
            singles.push(cycles_cost(c, 1, cycles));
            sets.push(cycles_cost(c, 5, cycles));
        }
    }
    (sets, singles)
}

/// `cycles` grants and releases of `keys` keys at once (1: the single-lock commands).
fn cycles_cost(c: &mut Connection, keys: usize, cycles: usize) -> Cost {
    crate::flush(c);
    reset_stats(c);
    let owner = "6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f";
    for chunk in (0..cycles).collect::<Vec<_>>().chunks(500) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let names: Vec<String> = (0..keys)
                .map(|j| format!("cost:{}:{j}", i % 1000))
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let n = keys.to_string();
            let (acquire, release) = if keys == 1 {
                (
                    [&["DLOCK.ACQUIRE"][..], &names, &[owner, "30000"]].concat(),
                    [&["DLOCK.RELEASE"][..], &names, &[owner]].concat(),
                )
            } else {
                (
                    [&["DLOCK.ACQUIREALL", &n][..], &names, &[owner, "30000"]].concat(),
                    [&["DLOCK.RELEASEALL", &n][..], &names, &[owner]].concat(),
                )
            };
            pipe.add_command(cmd(&acquire)).ignore();
            pipe.add_command(cmd(&release)).ignore();
        }
        pipe.exec(c).expect("grant cycles");
    }
    let stats = command_stats(c);
    let per_call = |name: &str| {
        let s = stats
            .get(name)
            .unwrap_or_else(|| panic!("no cmdstat_{name}"));
        s.usec as f64 / s.calls.max(1) as f64
    };
    let suffix = if keys == 1 { "" } else { "all" };
    Cost {
        acquire_us: per_call(&format!("dlock.acquire{suffix}")),
        release_us: per_call(&format!("dlock.release{suffix}")),
    }
}

/// The medians of the round-by-round ratios: (grant, grant + release) of sets over singles.
pub fn ratios(sets: &[Cost], singles: &[Cost]) -> (f64, f64) {
    let pairs = || sets.iter().zip(singles);
    (
        median(pairs().map(|(s, o)| s.acquire_us / o.acquire_us).collect()),
        median(pairs().map(|(s, o)| s.cycle_us() / o.cycle_us()).collect()),
    )
}

/// PING round trips (µs), one at a time, 1 ms apart, for `span`.
async fn pings(url: &str, span: Duration) -> Vec<f64> {
    let client = redis::Client::open(url).expect("node URL");
    let mut c = client
        .get_multiplexed_async_connection()
        .await
        .expect("PING connection");
    let end = Instant::now() + span;
    let mut rtts = Vec::new();
    while Instant::now() < end {
        let t = Instant::now();
        let _: String = redis::cmd("PING").query_async(&mut c).await.expect("PING");
        rtts.push(t.elapsed().as_secs_f64() * 1e6);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    rtts
}

/// PING p50, p99 and max (ms) on the idle node, then during `spec`'s churn of sets; the run.
pub async fn ping_during(
    url: &str,
    spec: Spec,
    taker: Arc<Taker>,
) -> ([(f64, f64, f64); 2], Record) {
    let figures = |v: Vec<f64>| {
        let ms = |p| percentile(v.clone(), p) / 1e3;
        (ms(50.0), ms(99.0), ms(100.0))
    };
    let idle = pings(url, Duration::from_secs(2)).await;
    let pinger = pings(url, spec.duration);
    let (busy, record) = tokio::join!(pinger, multi_run::run(spec, taker));
    ([figures(idle), figures(busy)], record)
}
