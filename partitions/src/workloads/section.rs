//! The critical section every writer runs: read the register, hold, write a new unique value,
//! the read and the write through the gate with the holder's token (`DLOCK.GUARD`) unless the
//! run bypasses the gate on purpose. The mutex, a read/write lock's writers and a leader all run
//! it; only where the token comes from differs (`Holder`).

use std::time::Duration;

use dlock_client::{Error, LockContext, LockGuard};
use redis::aio::MultiplexedConnection;

use crate::history::{emit, mono_ns, Event, Kind, F};
use crate::names::{holding_mark, GATE, REGISTER};
use crate::workloads::args::WorkerArgs;

/// Whose token the section writes with.
pub enum Holder<'a> {
    /// A lock's guard (the mutex, a read/write lock's writer): a STALE reply marks it lost.
    Lock(&'a LockGuard),
    /// A leader's context, the epoch its token: a STALE reply fires its loss signal.
    Leader(&'a LockContext),
}

impl Holder<'_> {
    /// The token, committed first if owed (`None`: the commit failed, the lock is lost).
    async fn token(&self) -> Option<u64> {
        match self {
            Holder::Lock(guard) => guard.token().await.ok(),
            Holder::Leader(ctx) => ctx.token().await.ok(),
        }
    }

    fn resource(&self) -> &str {
        match self {
            Holder::Lock(guard) => guard.resource(),
            Holder::Leader(ctx) => ctx.resource(),
        }
    }

    async fn guarded<T: redis::FromRedisValue>(
        &self,
        data: &mut MultiplexedConnection,
        cmd: &redis::Cmd,
    ) -> Result<T, Error> {
        match self {
            Holder::Lock(guard) => guard.guarded(data, GATE, cmd).await,
            Holder::Leader(ctx) => ctx.guarded(data, GATE, cmd).await,
        }
    }
}

/// The critical section: read, hold, write `new`.
pub async fn cas(
    args: &WorkerArgs,
    holder: Holder<'_>,
    data: &mut MultiplexedConnection,
    new: u64,
) {
    let (token, gated) = (holder.token().await, Some(!args.bypass_gate));
    let mut invoke = Event::new(args.id, Kind::Invoke, F::Cas);
    (invoke.token, invoke.new, invoke.gated) = (token, Some(new), gated);
    emit(&invoke);
    let done = |kind: Kind, read: Option<u64>, error: Option<String>, write_ns: Option<u64>| {
        let mut e = Event::new(args.id, kind, F::Cas);
        (e.token, e.new, e.read, e.error) = (token, Some(new), read, error);
        (e.write_ns, e.gated) = (write_ns, gated);
        emit(&e);
    };
    let get = redis::cmd("GET").arg(REGISTER).clone();
    let read = match send::<Option<u64>>(args, &holder, data, &get).await {
        Ok(v) => v.unwrap_or(0),
        // Nothing was written yet: whatever the read's fate, the operation did not happen.
        Err(e) => return done(Kind::Fail, None, Some(e.to_string()), None),
    };
    hold(args).await;
    let set = redis::cmd("SET").arg(REGISTER).arg(new).clone();
    let write_ns = Some(mono_ns());
    match send::<()>(args, &holder, data, &set).await {
        Ok(()) => done(Kind::Ok, Some(read), None, write_ns),
        Err(e @ (Error::Stale { .. } | Error::LockLost { .. })) => {
            done(Kind::Fail, Some(read), Some(e.to_string()), write_ns)
        }
        // A timeout or a broken connection: the write may have been applied.
        Err(e) => done(Kind::Info, Some(read), Some(e.to_string()), write_ns),
    }
}

/// Through the gate with the holder's token, or (the broken runs) straight to the register.
async fn send<T: redis::FromRedisValue>(
    args: &WorkerArgs,
    holder: &Holder<'_>,
    data: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<T, Error> {
    if args.bypass_gate {
        return cmd.query_async(data).await.map_err(|e| Error::Guarded {
            resource: holder.resource().into(),
            gate: "(bypassed)".into(),
            message: e.to_string(),
        });
    }
    holder.guarded(data, cmd).await
}

/// Marks the process as inside its critical section (the nemesis's `PauseHolder` stops it
/// then) for `hold_ms`.
pub async fn hold(args: &WorkerArgs) {
    let mark = holding_mark(&args.state_dir, args.id);
    // Best effort: a missing mark only means the nemesis picks another moment.
    let _ = std::fs::write(&mark, b"");
    tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
    let _ = std::fs::remove_file(&mark);
}
