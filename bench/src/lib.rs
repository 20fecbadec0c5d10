//! Shared pieces of the dlock benchmarks.

use std::time::Duration;

pub mod cluster;
pub mod contenders;
pub mod contention;
pub mod expiry;
pub mod external;
pub mod guarded;
pub mod handoff;
pub mod multi;
pub mod multi_cost;
pub mod multi_external;
pub mod multi_run;
pub mod page;
pub mod rawresp;
pub mod redisson;
pub mod report;
pub mod serverstats;
pub mod wakeups;

/// In-process contenders, by the name they are reported under.
pub type Named = Vec<(String, contenders::Contender)>;

/// How much each scenario measures: rounds (contenders alternating), ops per latency batch,
/// and the length of each throughput/contention batch.
pub struct Plan {
    pub rounds: usize,
    pub n: usize,
    pub duration: Duration,
}

/// Rounds of measurement windows of a saturation benchmark: `--quick` on the command line
/// gives fewer rounds of 1 s windows, for development.
pub struct WindowPlan {
    pub rounds: usize,
    pub window: Duration,
}

impl WindowPlan {
    pub fn from_args(full_rounds: usize, quick_rounds: usize) -> WindowPlan {
        let quick = std::env::args().any(|a| a == "--quick");
        WindowPlan {
            rounds: if quick { quick_rounds } else { full_rounds },
            window: Duration::from_secs(if quick { 1 } else { 3 }),
        }
    }
}

/// Empties the server's keyspace before the next measurement, synchronously: Valkey 8+ frees a
/// plain `FLUSHALL` in the background by default (`lazyfree-lazy-user-flush`), which would land
/// in the next `used_memory` reading and compete with the next timed run.
pub fn flush(c: &mut redis::Connection) {
    redis::cmd("FLUSHALL")
        .arg("SYNC")
        .exec(c)
        .expect("FLUSHALL SYNC");
}

/// Median of a small sample (the upper middle for even counts).
pub fn median(values: Vec<f64>) -> f64 {
    percentile(values, 50.0)
}

/// Nearest-rank percentile; NaN for an empty sample.
pub fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// A command from its words.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

/// What one kind of call cost the server, two ways.
#[derive(Clone, Copy, Debug)]
pub struct CallCost {
    /// INFO commandstats: the time inside the command only. Reading and parsing the arguments
    /// (where Redis makes the string a `SET` stores) and writing the reply are left out.
    pub usec_per_call: f64,
    /// The whole server process's CPU (user + system) over the calls, divided by the calls:
    /// everything the server did for them, the event loop, parsing and replies included.
    pub process_us_per_call: f64,
}

/// Runs `make(i)` for each of `keys` keys, pipelined, and returns what the calls of `stat` cost
/// the server, both ways.
pub fn call_cost(
    c: &mut redis::Connection,
    stat: &str,
    keys: usize,
    make: &dyn Fn(usize) -> redis::Cmd,
) -> CallCost {
    call_cost_piped(c, stat, (keys, 1_000), make)
}

/// As [`call_cost`], `keys.0` calls sent `keys.1` at a time (1: one call per round trip, as a
/// client that waits for each reply).
pub fn call_cost_piped(
    c: &mut redis::Connection,
    stat: &str,
    (keys, depth): (usize, usize),
    make: &dyn Fn(usize) -> redis::Cmd,
) -> CallCost {
    redis::cmd("CONFIG").arg("RESETSTAT").exec(c).unwrap();
    let cpu_before = serverstats::cpu_seconds(c);
    for chunk in (0..keys).collect::<Vec<_>>().chunks(depth.max(1)) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.add_command(make(i)).ignore();
        }
        pipe.exec(c).unwrap_or_else(|e| panic!("{stat}: {e}"));
    }
    let cpu_after = serverstats::cpu_seconds(c);
    let stats = serverstats::command_stats(c);
    let stat = stats
        .get(stat)
        .unwrap_or_else(|| panic!("no cmdstat_{stat}"));
    CallCost {
        usec_per_call: stat.usec as f64 / stat.calls.max(1) as f64,
        process_us_per_call: (cpu_after - cpu_before) * 1e6 / keys as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles_by_nearest_rank() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(hundred.clone(), 99.0), 99.0);
        assert_eq!(percentile(hundred, 50.0), 50.0);
        assert!(median(vec![]).is_nan());
    }
}
