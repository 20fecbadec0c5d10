//! The leader-election workload (`dlock-partitions worker --workload election`): each client
//! process campaigns for one election through the library (`LockManager::campaign`, the run's
//! TTL, the watchdog renewing), and while it leads performs a few guarded CAS operations on the
//! register with its epoch (read, hold, write a new unique value, each through the gate as the
//! mutex workload does), then resigns, so that leadership changes hands every few hundred
//! milliseconds. Recorded: the campaign (ok with the epoch), each CAS, the library's loss
//! signal (a lone event at the moment it was heard), the resignation.

use std::time::{Duration, Instant};

use dlock_client::{Error, Leadership, LockContext, LockManager};
use redis::aio::MultiplexedConnection;
use tokio::sync::oneshot;

use crate::history::{mono_ns, Event, Kind, F};
use crate::worker::{emit, manager, register, WorkerArgs, GATE, REGISTER};

const ELECTION: &str = "dlp:election";

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
            cas(args, &leading.context(), &mut data, new).await;
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
                e.token = Some(ctx.token());
                emit(&e);
            }
            _ = stopped => {}
        }
    });
    (stop, task)
}

/// One guarded CAS with the epoch as the token: read, hold, write `new`.
async fn cas(args: &WorkerArgs, ctx: &LockContext, data: &mut MultiplexedConnection, new: u64) {
    let gated = Some(!args.bypass_gate);
    let mut invoke = Event::new(args.id, Kind::Invoke, F::Cas);
    (invoke.token, invoke.new, invoke.gated) = (Some(ctx.token()), Some(new), gated);
    emit(&invoke);
    let done = |kind: Kind, read: Option<u64>, error: Option<String>, write_ns: Option<u64>| {
        let mut e = Event::new(args.id, kind, F::Cas);
        (e.token, e.new, e.read, e.error) = (Some(ctx.token()), Some(new), read, error);
        (e.write_ns, e.gated) = (write_ns, gated);
        emit(&e);
    };
    let get = redis::cmd("GET").arg(REGISTER).clone();
    let read = match send::<Option<u64>>(args, ctx, data, &get).await {
        Ok(v) => v.unwrap_or(0),
        // Nothing was written yet: whatever the read's fate, the operation did not happen.
        Err(e) => return done(Kind::Fail, None, Some(e.to_string()), None),
    };
    let mark = args.state_dir.join(format!("holding-{}", args.id));
    // Best effort: a missing mark only means the nemesis picks another moment.
    let _ = std::fs::write(&mark, b"");
    tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
    let _ = std::fs::remove_file(&mark);
    let set = redis::cmd("SET").arg(REGISTER).arg(new).clone();
    let write_ns = Some(mono_ns());
    match send::<()>(args, ctx, data, &set).await {
        Ok(()) => done(Kind::Ok, Some(read), None, write_ns),
        Err(e @ (Error::Stale { .. } | Error::LockLost { .. })) => {
            done(Kind::Fail, Some(read), Some(e.to_string()), write_ns)
        }
        // A timeout or a broken connection: the write may have been applied.
        Err(e) => done(Kind::Info, Some(read), Some(e.to_string()), write_ns),
    }
}

/// Through the gate with the epoch, or (the broken runs) straight to the register.
async fn send<T: redis::FromRedisValue>(
    args: &WorkerArgs,
    ctx: &LockContext,
    data: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<T, Error> {
    if args.bypass_gate {
        return cmd.query_async(data).await.map_err(|e| Error::Guarded {
            resource: ELECTION.into(),
            gate: "(bypassed)".into(),
            message: e.to_string(),
        });
    }
    ctx.guarded(data, GATE, cmd).await
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
