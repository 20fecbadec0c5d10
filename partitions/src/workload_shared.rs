//! The shared-lock and semaphore workloads of a client process (`dlock-partitions worker
//! --workload shared|semaphore`), beside the mutex's (worker.rs), recorded the same way.
//!
//! shared: a read/write lock. The process alternates roles. A writer takes the exclusive side
//! and does the mutex's guarded compare-and-set of the register (its token is above every
//! earlier reader's and writer's, docs/shared.md, so `DLOCK.GUARD` with it refuses exactly the
//! writes a newer holder superseded). A reader takes the shared side and reads the register
//! with `DLOCK.CHECK gate token` and `GET` in one MULTI: the check does not raise the gate, so
//! readers holding together never refuse each other (a reader's `GUARD` would raise the gate
//! to its token and make an overlapping reader with a lower token `STALE`), while a read after
//! a newer writer's write is refused. Its value joins the register's linearizability check.
//!
//! semaphore: one permit of a 2-permit semaphore, held, then released; nothing is written (a
//! permit's token names its holder, it does not rank it, so there is no gate to pass).

use std::time::{Duration, Instant};

use dlock_client::{LockGuard, LockManager, Resource};
use redis::aio::MultiplexedConnection;

use crate::history::{Event, Kind, Role, F};
use crate::worker::{self, emit, WorkerArgs, Workload, GATE, REGISTER, RESOURCE};

/// The semaphore's limit: what the checker holds the run to.
pub const LIMIT: u32 = 2;
const SEMAPHORE: &str = "dlp:semaphore";

/// The loop of a shared or semaphore client process until its schedule ends.
pub async fn work(args: &WorkerArgs) -> Result<(), String> {
    let locks = worker::manager(args)?;
    let mut data = worker::register(&args.register).await?;
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let ttl = Duration::from_millis(args.ttl_ms);
    let mut seq = 0u64;
    while Instant::now() < deadline {
        seq += 1;
        let role = role(args.workload, args.id, seq);
        let Some(guard) = acquire(args, &locks, role, ttl).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        match role {
            Role::Writer => {
                let new = u64::from(args.id) * 1_000_000 + seq;
                worker::cas(args, &guard, &mut data, new).await;
            }
            Role::Reader => read(args, &guard, &mut data).await,
            Role::Permit => hold(args).await,
        }
        worker::release(args.id, guard).await;
    }
    Ok(())
}

/// Readers and writers alternate, shifted by the process's id so that at any moment some
/// processes read while others write.
pub fn role(workload: Workload, id: u32, seq: u64) -> Role {
    match workload {
        Workload::Semaphore => Role::Permit,
        _ if (seq + u64::from(id)).is_multiple_of(2) => Role::Writer,
        _ => Role::Reader,
    }
}

/// The semaphore's limit asked of the nodes: one more than checked when misbehaving.
fn asked_limit(args: &WorkerArgs) -> u32 {
    LIMIT + u32::from(args.misbehave)
}

/// One lock() call for `role`; as the mutex's, a call that outlives its wait by 2 s is a lost
/// waiter (`info`).
async fn acquire(
    args: &WorkerArgs,
    locks: &LockManager,
    role: Role,
    ttl: Duration,
) -> Option<LockGuard> {
    let limit = (role == Role::Permit).then(|| asked_limit(args));
    let resource = match role {
        Role::Reader => Resource::shared(RESOURCE),
        // Misbehaving, a writer takes the readers' side: it writes beside them.
        Role::Writer if args.misbehave => Resource::shared(RESOURCE),
        Role::Writer => Resource::exclusive(RESOURCE),
        Role::Permit => Resource::semaphore(SEMAPHORE, asked_limit(args)),
    };
    let event = |kind| {
        let mut e = Event::new(args.id, kind, F::Acquire);
        (e.role, e.limit) = (Some(role), limit);
        e
    };
    emit(&event(Kind::Invoke));
    let wait = ttl * 2;
    let taken = tokio::time::timeout(
        wait + Duration::from_secs(2),
        locks.lock(resource, ttl, wait),
    );
    let (kind, guard, error) = match taken.await {
        Ok(Ok(guard)) => (Kind::Ok, Some(guard), None),
        Ok(Err(e)) => (Kind::Fail, None, Some(e.to_string())),
        Err(_) => (Kind::Info, None, Some("lock() did not return".into())),
    };
    let mut e = event(kind);
    e.token = guard.as_ref().map(LockGuard::token);
    e.validity_ms = guard.as_ref().map(|g| g.validity().as_millis() as u64);
    e.error = error;
    emit(&e);
    guard
}

/// Marks the process as holding (the nemesis's `PauseHolder` stops it then) for `hold_ms`.
async fn hold(args: &WorkerArgs) {
    let mark = args.state_dir.join(format!("holding-{}", args.id));
    // Best effort: a missing mark only means the nemesis picks another moment.
    let _ = std::fs::write(&mark, b"");
    tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
    let _ = std::fs::remove_file(&mark);
}

/// A reader's read (checked against the gate, unless the run bypasses it), then its hold.
async fn read(args: &WorkerArgs, guard: &LockGuard, data: &mut MultiplexedConnection) {
    let event = |kind| {
        let mut e = Event::new(args.id, kind, F::Read);
        (e.token, e.role) = (Some(guard.token()), Some(Role::Reader));
        e.gated = Some(!args.bypass_gate);
        e
    };
    emit(&event(Kind::Invoke));
    let done = match checked_get(args, guard.token(), data).await {
        Ok((true, value)) => {
            let mut e = event(Kind::Ok);
            e.read = Some(value);
            e
        }
        Ok((false, _)) => {
            let mut e = event(Kind::Fail);
            e.error = Some(format!("STALE: a write newer than token {}", guard.token()));
            e
        }
        // A read changes nothing: whatever became of it, it is left out of the register's check.
        Err(why) => {
            let mut e = event(Kind::Fail);
            e.error = Some(why);
            e
        }
    };
    emit(&done);
    hold(args).await;
}

/// `DLOCK.CHECK gate token` and `GET` in one transaction: whether the token was still current
/// at the gate when the value was read, and the value (0: empty).
async fn checked_get(
    args: &WorkerArgs,
    token: u64,
    data: &mut MultiplexedConnection,
) -> Result<(bool, u64), String> {
    if args.bypass_gate {
        let v: Option<u64> = redis::cmd("GET")
            .arg(REGISTER)
            .query_async(data)
            .await
            .map_err(|e| e.to_string())?;
        return Ok((true, v.unwrap_or(0)));
    }
    let (current, v): (i64, Option<u64>) = redis::pipe()
        .atomic()
        .cmd("DLOCK.CHECK")
        .arg(GATE)
        .arg(token)
        .cmd("GET")
        .arg(REGISTER)
        .query_async(data)
        .await
        .map_err(|e| e.to_string())?;
    Ok((current == 1, v.unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_alternate_and_differ_between_neighbours() {
        let w = Workload::Shared;
        assert_ne!(role(w, 1, 1), role(w, 1, 2));
        assert_ne!(role(w, 1, 1), role(w, 2, 1));
        assert_eq!(role(Workload::Semaphore, 1, 1), Role::Permit);
    }
}
