//! The lock scenarios' workload: `WORKERS` tasks taking one lock over and over until the
//! deadline, each critical section a few writes to the resource (through the gate and straight),
//! each section recorded as its worker saw it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dlock_client::LockManager;

use crate::fixture::resource::Resource;
use crate::record::Section;
use crate::scenario::{Fault, Scenario};

const WORKERS: usize = 4;

/// The lock the workers take.
pub const KEY: &str = "chaos";

/// Runs the workers until `deadline`, `manager` their way to the lock.
pub async fn run_workers(
    sc: &Scenario,
    manager: LockManager,
    resource: Arc<Resource>,
    deadline: Instant,
) {
    let plan = Plan {
        ttl: sc.ttl,
        hold: sc.hold,
        writes: sc.writes,
        pauses: sc.fault == Fault::PauseWorker,
        deadline,
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| tokio::spawn(worker(id, manager.clone(), resource.clone(), plan)))
        .collect();
    for w in workers {
        let _ = w.await;
    }
}

#[derive(Clone, Copy)]
struct Plan {
    ttl: Duration,
    hold: Duration,
    writes: u32,
    /// Worker 0 freezes past its TTL in every other section (scenario 5).
    pauses: bool,
    deadline: Instant,
}

/// Takes the lock over and over until the deadline; each section writes `writes` times.
async fn worker(id: usize, manager: LockManager, resource: Arc<Resource>, plan: Plan) {
    let Ok(mut conn) = resource.connect().await else {
        eprintln!("chaos: worker {id} cannot reach the resource");
        return;
    };
    let mut sections = 0u32;
    while Instant::now() < plan.deadline {
        let Ok(guard) = manager.lock(KEY, plan.ttl, Duration::from_secs(1)).await else {
            continue;
        };
        sections += 1;
        let Ok(token) = guard.token().await else {
            continue; // a commit that failed: the lock is lost, its token never used
        };
        let (granted_at, start) = (Instant::now(), resource.now());
        for write in 0..plan.writes {
            // A refusal is the gate doing its job.
            resource.write(&mut conn, token).await;
            if plan.pauses && id == 0 && sections.is_multiple_of(2) && write == 0 {
                // The GC-pause timeline: frozen past the TTL, then resumes its writes.
                tokio::time::sleep(plan.ttl + Duration::from_millis(300)).await;
            } else if write + 1 < plan.writes {
                tokio::time::sleep(plan.hold / plan.writes).await;
            }
        }
        let end = resource.now();
        resource.record(Section {
            token,
            granted_at,
            start,
            end,
        });
        let _ = guard.release().await;
    }
}
