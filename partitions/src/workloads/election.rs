//! The leader-election workload (`dlock-partitions worker --workload election`): each client
//! process campaigns for one election through the library (`LockManager::campaign`, the run's
//! TTL, the watchdog renewing), and while it leads performs a few guarded CAS operations on the
//! register with its epoch (section.rs: read, hold, write a new unique value, each through the
//! gate as the mutex workload does), then resigns, so that leadership changes hands every few
//! hundred milliseconds. Recorded: the campaign (ok with the epoch), each CAS, the library's loss
//! signal (a lone event at the moment it was heard), the resignation.

use std::time::{Duration, Instant};

use dlock_client::{Leadership, LockContext, LockManager};
use tokio::sync::oneshot;

use crate::history::{emit, Event, Kind, F};
use crate::names::ELECTION;
use crate::workloads::args::WorkerArgs;
use crate::workloads::connect::{manager, register};
use crate::workloads::section::{cas, Holder};

/// Half the terms are short, 1 to this many CAS operations (handoffs at different points of
/// the register's history); the other half are long, `LONG_TERM` writes (two leases at 100 ms
/// a write), so that a leader cut off mid-term usually reaches its renew deadline and must
/// hear its loss signal rather than resign first.
const SHORT_TERM_MAX: u64 = 4;
const LONG_TERM: u64 = 20;

fn term_writes() -> u64 {
    if rand::random::<bool>() {
        1 + rand::random::<u64>() % SHORT_TERM_MAX
    } else {
        LONG_TERM
    }
}

pub async fn work(args: &WorkerArgs) -> Result<(), String> {
    let locks = manager(args)?;
    let mut data = register(&args.register).await?;
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let mut seq = 0u64;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Some(leading) = campaign(args, &locks, left).await else {
            // No quorum on this side of a partition: try again soon, not in a busy loop.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (stop, watcher) = watch(args.id, leading.context());
        let writes = term_writes();
        for _ in 0..writes {
            // A leader told it lost leadership stops writing (the library's contract).
            if leading.is_lost() || Instant::now() >= deadline {
                break;
            }
            seq += 1;
            let new = u64::from(args.id) * 1_000_000 + seq;
            cas(args, Holder::Leader(&leading.context()), &mut data, new).await;
        }
        let _ = stop.send(());
        let _ = watcher.await;
        resign(args.id, leading).await;
    }
    Ok(())
}

/// One campaign, given up when the schedule ends (`info`: it may have been granted as it was
/// dropped; nobody believed it led).
async fn campaign(args: &WorkerArgs, locks: &LockManager, left: Duration) -> Option<Leadership> {
    emit(&Event::new(args.id, Kind::Invoke, F::Campaign));
    let value = format!("c{}", args.id);
    let ttl = Duration::from_millis(args.ttl_ms);
    let won = tokio::time::timeout(left, locks.campaign(ELECTION, &value, ttl)).await;
    let (kind, leading, error) = match won {
        Ok(Ok(leading)) => (Kind::Ok, Some(leading), None),
        Ok(Err(e)) => (Kind::Fail, None, Some(e.to_string())),
        Err(_) => (
            Kind::Info,
            None,
            Some("the schedule ended while queued".into()),
        ),
    };
    let mut e = Event::new(args.id, kind, F::Campaign);
    e.token = leading.as_ref().map(Leadership::epoch);
    e.error = error;
    emit(&e);
    leading
}

/// Records the loss signal when it fires, until told the term is over. `biased`: a signal
/// that fired before the stop is recorded, not dropped.
fn watch(id: u32, ctx: LockContext) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = ctx.lost() => {
                let mut e = Event::new(id, Kind::Ok, F::Lost);
                e.token = ctx.token().await.ok();
                emit(&e);
            }
            _ = stopped => {}
        }
    });
    (stop, task)
}

async fn resign(id: u32, leading: Leadership) {
    let mut invoke = Event::new(id, Kind::Invoke, F::Resign);
    invoke.token = Some(leading.epoch());
    emit(&invoke);
    let epoch = leading.epoch();
    let resigned = leading.resign().await;
    let kind = if resigned.is_ok() {
        Kind::Ok
    } else {
        Kind::Fail
    };
    let mut e = Event::new(id, kind, F::Resign);
    (e.token, e.error) = (Some(epoch), resigned.err().map(|e| e.to_string()));
    emit(&e);
}
