//! The shared-lock and semaphore workloads of a client process (`dlock-partitions worker
//! --workload shared|semaphore`), beside the mutex's (mutex.rs), recorded the same way.
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

use crate::history::{emit, Event, Kind, Role, F};
use crate::names::{GATE, REGISTER, RESOURCE, SEMAPHORE};
use crate::workloads::args::{WorkerArgs, Workload};
use crate::workloads::connect::{manager, register};
use crate::workloads::lock::{self, release};
use crate::workloads::section::{cas, hold, Holder};

/// The semaphore's limit: what the checker holds the run to.
pub const LIMIT: u32 = 2;

/// The loop of a shared or semaphore client process until its schedule ends.
pub async fn work(args: &WorkerArgs) -> Result<(), String> {
    let locks = manager(args)?;
    let mut data = register(&args.register).await?;
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let mut seq = 0u64;
    while Instant::now() < deadline {
        seq += 1;
        let role = role(args.workload, args.id, seq);
        let Some(guard) = acquire(args, &locks, role).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        match role {
            Role::Writer => {
                let new = u64::from(args.id) * 1_000_000 + seq;
                cas(args, Holder::Lock(&guard), &mut data, new).await;
            }
            Role::Reader => read(args, &guard, &mut data).await,
            Role::Permit => hold(args).await,
        }
        release(args.id, guard).await;
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

/// One lock() call for `role`, recorded with it (and a permit with the limit asked).
async fn acquire(args: &WorkerArgs, locks: &LockManager, role: Role) -> Option<LockGuard> {
    let limit = (role == Role::Permit).then(|| asked_limit(args));
    let resource = match role {
        Role::Reader => Resource::shared(RESOURCE),
        // Misbehaving, a writer takes the readers' side: it writes beside them.
        Role::Writer if args.misbehave => Resource::shared(RESOURCE),
        Role::Writer => Resource::exclusive(RESOURCE),
        Role::Permit => Resource::semaphore(SEMAPHORE, asked_limit(args)),
    };
    lock::acquire(args, locks, resource, (Some(role), limit)).await
}

/// A reader's read (checked against the gate, unless the run bypasses it), then its hold.
async fn read(args: &WorkerArgs, guard: &LockGuard, data: &mut MultiplexedConnection) {
    // Queued holds are committed before they are held: reading the token sends nothing.
    let Ok(token) = guard.token().await else {
        return;
    };
    let event = |kind| {
        let mut e = Event::new(args.id, kind, F::Read);
        (e.token, e.role) = (Some(token), Some(Role::Reader));
        e.gated = Some(!args.bypass_gate);
        e
    };
    emit(&event(Kind::Invoke));
    let done = match checked_get(args, token, data).await {
        Ok((true, value)) => {
            let mut e = event(Kind::Ok);
            e.read = Some(value);
            e
        }
        Ok((false, _)) => {
            let mut e = event(Kind::Fail);
            e.error = Some(format!("STALE: a write newer than token {token}"));
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
