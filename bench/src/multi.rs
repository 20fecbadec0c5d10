//! Dining philosophers for `make bench-multi` (docs/bench/multi.md): `workers` workers around
//! a table of as many resources, worker `i` needing resources `i .. i+k-1` (mod the table), so
//! neighbours overlap and, taken one by one in each worker's own order, the last worker's
//! wrap-around closes a cycle. Each worker asks for its set, holds it for a short critical
//! section, gives it back, and asks again until the run ends.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::percentile;

/// One run's shape.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub workers: usize,
    /// Resources per set.
    pub k: usize,
    /// The critical section.
    pub hold: Duration,
    /// The lease of dlock, redsync and node-redlock (Redisson's `lock()` takes its watchdog's).
    pub ttl: Duration,
    pub duration: Duration,
}

impl Spec {
    /// Worker `w`'s resources in its own order (left neighbour first, as philosophers do).
    pub fn wants(&self, w: usize) -> Vec<usize> {
        (0..self.k).map(|j| (w + j) % self.workers).collect()
    }

    /// A worker stuck longer than this made no progress for 5 leases: a deadlock.
    pub fn deadlock_after(&self) -> Duration {
        self.ttl * 5
    }
}

/// What a run recorded, in-process or by a harness (the same JSON fields).
#[derive(Debug, Default)]
pub struct Record {
    /// From asking to holding the whole set, for each section completed in the run.
    pub waits_us: Vec<f64>,
    /// Each worker's completion times, ms from the start.
    pub done_ms: Vec<Vec<f64>>,
    pub seconds: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Sections that ended after the lease of the first resource taken had run out: the
    /// worker went on without that lock (per-key contenders only).
    pub expired: u64,
    /// Rounds in which a contender gave everything back and started over, when it reports them.
    pub retries: u64,
}

/// A run's figures.
#[derive(Debug)]
pub struct Summary {
    pub sections_per_s: f64,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
    pub wait_max_ms: f64,
    /// Waits longer than one lease.
    pub stalls: usize,
    /// Workers that went longer than 5 leases without completing a section.
    pub deadlocked: usize,
    /// The longest time no worker at all completed a section, s.
    pub run_gap_s: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub expired: u64,
    pub retries: u64,
}

impl Record {
    pub fn new(workers: usize) -> Record {
        Record {
            done_ms: vec![Vec::new(); workers],
            ..Record::default()
        }
    }

    pub fn summary(&self, spec: &Spec) -> Summary {
        let end_ms = self.seconds * 1e3;
        let worker_gaps: Vec<f64> = self
            .done_ms
            .iter()
            .map(|d| longest_gap(d, end_ms))
            .collect();
        let all: Vec<f64> = self.done_ms.iter().flatten().copied().collect();
        let ms = |p| percentile(self.waits_us.clone(), p) / 1e3;
        let limit = spec.deadlock_after().as_secs_f64() * 1e3;
        let sections = all.len() as f64;
        Summary {
            sections_per_s: if self.seconds > 0.0 {
                sections / self.seconds
            } else {
                0.0
            },
            wait_p50_ms: ms(50.0),
            wait_p99_ms: ms(99.0),
            wait_max_ms: ms(100.0),
            stalls: self
                .waits_us
                .iter()
                .filter(|&&w| w > spec.ttl.as_secs_f64() * 1e6)
                .count(),
            deadlocked: worker_gaps.iter().filter(|&&g| g > limit).count(),
            run_gap_s: longest_gap(&all, end_ms) / 1e3,
            errors: self.errors,
            first_error: self.first_error.clone(),
            expired: self.expired,
            retries: self.retries,
        }
    }

    /// Reads a harness's JSON line: `waits_us`, `done_ms`, `seconds`, `errors`, `error`,
    /// `expired`.
    pub fn parse(line: &str) -> Option<Record> {
        let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        let numbers = |v: &serde_json::Value| -> Vec<f64> {
            v.as_array()
                .map_or_else(Vec::new, |a| a.iter().filter_map(|x| x.as_f64()).collect())
        };
        let count = |name: &str| v.get(name).and_then(|x| x.as_u64()).unwrap_or(0);
        Some(Record {
            waits_us: numbers(v.get("waits_us")?),
            done_ms: v.get("done_ms")?.as_array()?.iter().map(numbers).collect(),
            seconds: v.get("seconds")?.as_f64()?,
            errors: count("errors"),
            first_error: v.get("error").and_then(|e| e.as_str()).map(str::to_string),
            expired: count("expired"),
            retries: count("retries"),
        })
    }
}

/// The longest interval without a completion between the start (0), the completions and the
/// end of the run.
fn longest_gap(done_ms: &[f64], end_ms: f64) -> f64 {
    let mut times: Vec<f64> = done_ms.to_vec();
    times.sort_by(f64::total_cmp);
    let mut last = 0.0_f64;
    let mut gap = 0.0_f64;
    for t in times.into_iter().chain([end_ms]) {
        gap = gap.max(t - last);
        last = last.max(t);
    }
    gap
}

/// A worker's log, shared with the runner so that a worker cut off at the end still counts.
pub type Shared = Arc<Mutex<Record>>;

/// Marks for one worker's sections.
pub struct Clock {
    pub start: Instant,
    pub deadline: Instant,
}

impl Clock {
    pub fn new(duration: Duration) -> Clock {
        let start = Instant::now();
        Clock {
            start,
            deadline: start + duration,
        }
    }

    /// Logs a section that asked at `asked` and held from `held`; one that ends after the
    /// deadline is not counted.
    pub fn section(&self, record: &Shared, worker: usize, asked: Instant, held: Instant) {
        let now = Instant::now();
        if now > self.deadline {
            return;
        }
        let mut r = record.lock().unwrap();
        r.waits_us.push((held - asked).as_secs_f64() * 1e6);
        r.done_ms[worker].push((now - self.start).as_secs_f64() * 1e3);
    }

    pub fn error(&self, record: &Shared, error: String) {
        let mut r = record.lock().unwrap();
        r.errors += 1;
        r.first_error.get_or_insert(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_count_from_the_start_to_the_end() {
        assert_eq!(longest_gap(&[], 10.0), 10.0);
        assert_eq!(longest_gap(&[2.0, 9.0, 3.0], 10.0), 6.0);
    }

    #[test]
    fn the_last_worker_wraps_around() {
        let spec = Spec {
            workers: 5,
            k: 2,
            hold: Duration::from_millis(1),
            ttl: Duration::from_secs(1),
            duration: Duration::from_secs(1),
        };
        assert_eq!(spec.wants(0), vec![0, 1]);
        assert_eq!(spec.wants(4), vec![4, 0]);
    }

    #[test]
    fn reads_a_harness_line() {
        // Worker 0 completes sections all through the 10 s (no gap over 5 s); worker 1 none.
        let line = r#"{"waits_us":[5,2000000],"done_ms":[[1,2,4000,8000,9999],[]],"seconds":10,"errors":1,"error":"CROSSSLOT"}"#;
        let r = Record::parse(line).unwrap();
        let spec = Spec {
            workers: 2,
            k: 2,
            hold: Duration::from_millis(1),
            ttl: Duration::from_secs(1),
            duration: Duration::from_secs(10),
        };
        let s = r.summary(&spec);
        assert_eq!((s.stalls, s.deadlocked, s.errors), (1, 1, 1));
        assert_eq!(s.first_error.as_deref(), Some("CROSSSLOT"));
    }
}
