//! A client process (`dlock-partitions worker`, started by the run inside its own namespace):
//! the mutex workload through the Rust library. Over and over: take the lock, read the
//! register, hold, write a new unique value, release. The read and the write go through the
//! gate (`DLOCK.GUARD` with the lock's token) unless the run breaks the gate on purpose. Every
//! operation is printed as JSON lines (history.rs) on stdout, flushed at once, so a process
//! SIGKILLed or SIGSTOPped has told what it did up to that moment.

use std::io::Write;
use std::time::{Duration, Instant};

use dlock_client::{Error, LockGuard, LockManager, ReplicaAck};
use redis::aio::MultiplexedConnection;

use crate::history::{Event, Kind, F};

pub const RESOURCE: &str = "dlp:lock";
pub const REGISTER: &str = "dlp:register";
pub(crate) const GATE: &str = "dlp:gate";

/// What the client processes do (docs/safety/partitions.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// One mutex, a guarded compare-and-set of the register inside it.
    #[default]
    Mutex,
    /// A read/write lock: writers as the mutex, readers read the register (workload_shared.rs).
    Shared,
    /// Permits of a 2-permit semaphore, each held then released (workload_shared.rs).
    Semaphore,
    /// Campaign, write as leader with the epoch, resign (workload_election.rs).
    Election,
}

#[derive(clap::Args, Clone, Debug)]
pub struct WorkerArgs {
    #[arg(long)]
    pub id: u32,
    /// The lock's nodes, URLs separated by `;` (a sentinel URL has commas).
    #[arg(long, value_delimiter = ';')]
    pub nodes: Vec<String>,
    #[arg(long)]
    pub register: String,
    #[arg(long)]
    pub ttl_ms: u64,
    /// Time between the read and the write (the critical section).
    #[arg(long)]
    pub hold_ms: u64,
    #[arg(long)]
    pub secs: u64,
    /// Reads and writes bypass the gate (the deliberately broken configuration).
    #[arg(long)]
    pub bypass_gate: bool,
    /// Where to mark being inside a critical section (the nemesis's `PauseHolder` reads it).
    #[arg(long)]
    pub state_dir: std::path::PathBuf,
    /// Replicas each grant must reach (0: no acknowledgement).
    #[arg(long, default_value_t = 0)]
    pub replicas: u32,
    #[arg(long, value_enum, default_value_t = Workload::Mutex)]
    pub workload: Workload,
    /// The deliberately broken configuration: a semaphore's workers ask the nodes for one
    /// permit more than the limit the run checks; a shared lock's writers take the shared side.
    #[arg(long)]
    pub misbehave: bool,
}

pub fn main(args: WorkerArgs) -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("worker {}: tokio: {e}", args.id);
            return std::process::ExitCode::FAILURE;
        }
    };
    let run = async {
        match args.workload {
            Workload::Mutex => work(&args).await,
            Workload::Shared | Workload::Semaphore => crate::workload_shared::work(&args).await,
            Workload::Election => crate::workload_election::work(&args).await,
        }
    };
    match runtime.block_on(run) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worker {}: {e}", args.id);
            std::process::ExitCode::FAILURE
        }
    }
}

pub(crate) fn emit(e: &Event) {
    let mut out = std::io::stdout().lock();
    if let Ok(line) = serde_json::to_string(e) {
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

pub(crate) fn manager(args: &WorkerArgs) -> Result<LockManager, String> {
    let ack = match args.replicas {
        0 => ReplicaAck::Off,
        count => ReplicaAck::Replicas {
            count,
            timeout: Duration::from_millis(200),
        },
    };
    LockManager::builder(&args.nodes)
        .timeout(Duration::from_millis(100))
        .replica_ack(ack)
        .build()
        .map_err(|e| format!("lock manager: {e}"))
}

pub(crate) async fn register(url: &str) -> Result<MultiplexedConnection, String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("register {url}: {e}"))
}

async fn work(args: &WorkerArgs) -> Result<(), String> {
    let locks = manager(args)?;
    let mut data = register(&args.register).await?;
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let (ttl, wait) = (
        Duration::from_millis(args.ttl_ms),
        Duration::from_millis(args.ttl_ms * 2),
    );
    let mut seq = 0u64;
    while Instant::now() < deadline {
        let Some(guard) = acquire(args.id, &locks, ttl, wait).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        seq += 1;
        let new = u64::from(args.id) * 1_000_000 + seq;
        cas(args, &guard, &mut data, new).await;
        release(args.id, guard).await;
    }
    Ok(())
}

/// One lock() call; a call that outlives its wait by 2 s is a lost waiter (`info`).
async fn acquire(id: u32, locks: &LockManager, ttl: Duration, wait: Duration) -> Option<LockGuard> {
    emit(&Event::new(id, Kind::Invoke, F::Acquire));
    let limit = wait + Duration::from_secs(2);
    let taken = tokio::time::timeout(limit, locks.lock(RESOURCE, ttl, wait)).await;
    let (kind, guard, error) = match taken {
        Ok(Ok(guard)) => (Kind::Ok, Some(guard), None),
        Ok(Err(e)) => (Kind::Fail, None, Some(e.to_string())),
        Err(_) => (Kind::Info, None, Some("lock() did not return".into())),
    };
    let mut e = Event::new(id, kind, F::Acquire);
    e.token = guard.as_ref().map(LockGuard::token);
    e.validity_ms = guard.as_ref().map(|g| g.validity().as_millis() as u64);
    e.error = error;
    emit(&e);
    guard
}

/// The critical section: read, hold, write `new`.
pub(crate) async fn cas(
    args: &WorkerArgs,
    guard: &LockGuard,
    data: &mut MultiplexedConnection,
    new: u64,
) {
    let mut invoke = Event::new(args.id, Kind::Invoke, F::Cas);
    invoke.token = Some(guard.token());
    invoke.new = Some(new);
    invoke.gated = Some(!args.bypass_gate);
    emit(&invoke);
    let done = |kind: Kind, read: Option<u64>, error: Option<String>, write_ns: Option<u64>| {
        let mut e = Event::new(args.id, kind, F::Cas);
        e.write_ns = write_ns;
        (e.token, e.new, e.read, e.error) = (Some(guard.token()), Some(new), read, error);
        e.gated = Some(!args.bypass_gate);
        emit(&e);
    };
    let get = redis::cmd("GET").arg(REGISTER).clone();
    let read: Result<Option<u64>, Error> = send(args, guard, data, &get).await;
    let read = match read {
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
    let write_ns = Some(crate::history::mono_ns());
    match send::<()>(args, guard, data, &set).await {
        Ok(()) => done(Kind::Ok, Some(read), None, write_ns),
        Err(e @ (Error::Stale { .. } | Error::LockLost { .. })) => {
            done(Kind::Fail, Some(read), Some(e.to_string()), write_ns)
        }
        // A timeout or a broken connection: the write may have been applied.
        Err(e) => done(Kind::Info, Some(read), Some(e.to_string()), write_ns),
    }
}

async fn send<T: redis::FromRedisValue>(
    args: &WorkerArgs,
    guard: &LockGuard,
    data: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<T, Error> {
    if args.bypass_gate {
        return cmd.query_async(data).await.map_err(|e| Error::Guarded {
            resource: RESOURCE.into(),
            gate: "(bypassed)".into(),
            message: e.to_string(),
        });
    }
    guard.guarded(data, GATE, cmd).await
}

pub(crate) async fn release(id: u32, guard: LockGuard) {
    emit(&Event::new(id, Kind::Invoke, F::Release));
    let kind = match guard.release().await {
        Ok(()) => Kind::Ok,
        Err(_) => Kind::Fail,
    };
    emit(&Event::new(id, kind, F::Release));
}
