//! Taking and releasing a lock, recorded: the mutex's, a read/write lock's sides and a
//! semaphore's permits all go through these two calls.

use std::time::Duration;

use dlock_client::{LockGuard, LockManager, Resource};

use crate::history::{emit, Event, Kind, Role, F};
use crate::workloads::args::WorkerArgs;

/// One lock() call on `resource` (the lease one TTL, the wait two); a call that outlives its
/// wait by 2 s is a lost waiter (`info`). `role` and `limit` are recorded with it (the shared
/// workloads': absent for the mutex).
pub async fn acquire(
    args: &WorkerArgs,
    locks: &LockManager,
    resource: Resource<'_>,
    (role, limit): (Option<Role>, Option<u32>),
) -> Option<LockGuard> {
    let event = |kind| {
        let mut e = Event::new(args.id, kind, F::Acquire);
        (e.role, e.limit) = (role, limit);
        e
    };
    emit(&event(Kind::Invoke));
    let ttl = Duration::from_millis(args.ttl_ms);
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
    // A hold without a wait commits its token on this read; one whose commit failed was held
    // for a moment and then lost: an outcome the history cannot call either way.
    let (kind, guard, error, token) = match guard {
        Some(guard) => match guard.token().await {
            Ok(token) => (kind, Some(guard), error, Some(token)),
            Err(e) => (Kind::Info, None, Some(e.to_string()), None),
        },
        None => (kind, None, error, None),
    };
    let mut e = event(kind);
    e.token = token;
    e.validity_ms = guard.as_ref().map(|g| g.validity().as_millis() as u64);
    e.error = error;
    emit(&e);
    guard
}

pub async fn release(id: u32, guard: LockGuard) {
    emit(&Event::new(id, Kind::Invoke, F::Release));
    let kind = match guard.release().await {
        Ok(()) => Kind::Ok,
        Err(_) => Kind::Fail,
    };
    emit(&Event::new(id, kind, F::Release));
}
