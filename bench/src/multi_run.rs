//! The in-process contenders of `make bench-multi` and the loop each worker runs: dlock's sets
//! (`lock_all`) and dlock's single locks taken in sorted order (`lock` per resource).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_client::{LockGuard, LockManager, LockSet, SetGuard};

use crate::multi::{Clock, Record, Shared, Spec};

/// How long a dlock call may wait for its set (far beyond any wait seen; a timeout is logged
/// as an error, and its worker's gap as a deadlock).
const WAIT: Duration = Duration::from_secs(30);

/// One contender, over resources named `names[i]`.
pub enum Taker {
    /// `lock_all` of the worker's set, queued on the nodes.
    Sets(LockManager, Vec<String>),
    /// `lock` of each resource in sorted order, holding the earlier ones.
    Sorted(LockManager, Vec<String>),
}

/// What a worker holds during its section.
enum Held {
    Set(SetGuard),
    /// The guards, and when the first was granted.
    Keys(Vec<LockGuard>, Instant),
}

impl Taker {
    /// Takes worker `w`'s set (and the rounds that gave everything back: none here).
    async fn take(&self, w: usize, spec: &Spec) -> Result<(Held, u64), String> {
        let wants = spec.wants(w);
        match self {
            Taker::Sets(m, names) => {
                let set = LockSet::new(wants.iter().map(|&r| names[r].clone()))
                    .map_err(|e| e.to_string())?;
                let guard = m.lock_all(&set, spec.ttl, WAIT).await;
                Ok((Held::Set(guard.map_err(|e| e.to_string())?), 0))
            }
            Taker::Sorted(m, names) => {
                let mut order: Vec<&String> = wants.iter().map(|&r| &names[r]).collect();
                order.sort();
                let mut guards = Vec::with_capacity(order.len());
                let mut first = Instant::now();
                for (i, name) in order.into_iter().enumerate() {
                    match m.lock(name.as_str(), spec.ttl, WAIT).await {
                        Ok(g) => guards.push(g),
                        Err(e) => {
                            let _ = release_all(guards).await;
                            return Err(e.to_string());
                        }
                    }
                    if i == 0 {
                        first = Instant::now();
                    }
                }
                Ok((Held::Keys(guards, first), 0))
            }
        }
    }

    async fn give_back(&self, held: Held) -> Result<(), String> {
        match held {
            Held::Set(g) => g.release().await.map_err(|e| e.to_string()),
            Held::Keys(guards, _) => release_all(guards).await,
        }
    }
}

async fn release_all(guards: Vec<LockGuard>) -> Result<(), String> {
    let mut result = Ok(());
    for g in guards {
        if let Err(e) = g.release().await {
            result = Err(e.to_string());
        }
    }
    result
}

/// Runs `spec.workers` workers for `spec.duration`; workers still stuck 5 leases after the
/// end are abandoned (their gap counts).
pub async fn run(spec: Spec, taker: Arc<Taker>) -> Record {
    let record: Shared = Arc::new(Mutex::new(Record::new(spec.workers)));
    let clock = Arc::new(Clock::new(spec.duration));
    let mut handles: Vec<_> = (0..spec.workers)
        .map(|w| {
            let (taker, record, clock) = (taker.clone(), record.clone(), clock.clone());
            tokio::spawn(async move { worker(w, spec, &taker, &record, &clock).await })
        })
        .collect();
    let abandon = tokio::time::Instant::from_std(clock.deadline + spec.deadlock_after());
    for h in &mut handles {
        let _ = tokio::time::timeout_at(abandon, h).await;
    }
    handles.iter().for_each(|h| h.abort());
    let mut r = std::mem::take(&mut *record.lock().unwrap());
    r.seconds = spec.duration.as_secs_f64();
    r
}

async fn worker(w: usize, spec: Spec, taker: &Taker, record: &Shared, clock: &Clock) {
    while Instant::now() < clock.deadline {
        let asked = Instant::now();
        let (held, retries) = match taker.take(w, &spec).await {
            Ok(taken) => taken,
            Err(e) => {
                clock.error(record, e);
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let at = Instant::now();
        tokio::time::sleep(spec.hold).await;
        let expired = matches!(&held, Held::Keys(_, first) if first.elapsed() >= spec.ttl);
        let given_back = taker.give_back(held).await;
        clock.section(record, w, asked, at);
        {
            let mut r = record.lock().unwrap();
            r.expired += u64::from(expired);
            r.retries += retries;
        }
        if let Err(e) = given_back {
            clock.error(record, e);
        }
    }
}
