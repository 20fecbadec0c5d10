//! `dlock run`: flock(1) for a fleet.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use dlock_client::{LockGuard, LockManager, LockSet, Resource, SetGuard, Watchdog};
use nix::sys::signal::Signal;
use tokio::process::Command;
use tokio::signal::unix::{signal, Signal as UnixSignal, SignalKind};

use crate::supervise::{self, Supervised};
use crate::{code_of, exit};

/// What `dlock run` holds: one resource, or several as one set.
pub enum Target<'a> {
    One(Resource<'a>),
    Set(LockSet),
}

pub async fn run(
    manager: &LockManager,
    target: Target<'_>,
    (ttl, wait, max_hold): (Duration, Duration, Option<Duration>),
    quiet: bool,
    argv: &[String],
) -> u8 {
    // Handlers go in before the wait: a Ctrl-C from then on withdraws the wait or releases.
    let mut stops = match stop_signals() {
        Ok(handlers) => handlers,
        Err(e) => {
            eprintln!("dlock: cannot install signal handlers: {e}");
            return exit::CANNOT_RUN;
        }
    };
    let resource = match &target {
        Target::One(one) => one.name.to_string(),
        Target::Set(set) => set.label(),
    };
    let taken = match take(manager, target, (ttl, wait), quiet, &mut stops).await {
        Ok(taken) => taken,
        Err(code) => return code,
    };
    // DLOCK_TOKEN leaves dlock only committed (a no-wait hold commits it now).
    let (guards, tokens) = match committed(taken).await {
        Ok(held) => held,
        Err(code) => return code,
    };
    let started = Instant::now();
    let mut command = match spawn(argv, &guards, &tokens) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("dlock: cannot run {:?}: {e}", argv[0]);
            release_all(guards).await;
            return exit::CANNOT_RUN;
        }
    };
    let watchdogs: Vec<Watchdog> = guards.iter().map(|g| g.watchdog(ttl)).collect();
    let held = Held {
        resource: &resource,
        started,
        max_hold,
    };
    let ended = until_ended(&mut command, &watchdogs, held, &mut stops).await;
    conclude(command, ended, watchdogs, guards).await
}

/// What was taken: one lock, or a set (one guard per slot group).
enum Taken {
    One(LockGuard),
    Set(SetGuard),
}

/// The guards and each resource's token, committed; a commit that failed: the lock is lost,
/// given back, and the exit code is LOST's.
async fn committed(taken: Taken) -> Result<(Vec<LockGuard>, Vec<u64>), u8> {
    let tokens = match &taken {
        Taken::One(guard) => guard.token().await.map(|t| vec![t]),
        Taken::Set(set) => set.tokens().await,
    };
    let guards = match taken {
        Taken::One(guard) => vec![guard],
        Taken::Set(set) => set.into_guards(),
    };
    match tokens {
        Ok(tokens) => Ok((guards, tokens)),
        Err(e) => {
            eprintln!("dlock: {e}");
            release_all(guards).await;
            Err(exit::LOST)
        }
    }
}

async fn release_all(guards: Vec<LockGuard>) {
    for guard in guards {
        let _ = guard.release().await;
    }
}

/// The lock, or the exit code: its error's, or a stop signal's that came during the wait.
async fn take(
    manager: &LockManager,
    target: Target<'_>,
    times: (Duration, Duration),
    quiet: bool,
    (interrupt, terminate): &mut (StopSignal, StopSignal),
) -> Result<Taken, u8> {
    let acquiring = async {
        match &target {
            Target::One(one) => crate::progress::lock(manager, *one, times, quiet)
                .await
                .map(Taken::One),
            Target::Set(set) if times.1.is_zero() => {
                manager.try_lock_all(set, times.0).await.map(Taken::Set)
            }
            Target::Set(set) => manager
                .lock_all(set, times.0, times.1)
                .await
                .map(Taken::Set),
        }
    };
    tokio::select! {
        acquired = acquiring => acquired.map_err(|e| code_of(&e)),
        // The dropped lock() withdraws its wait in the background; main settles it.
        _ = interrupt.recv() => Err(exit::INTERRUPTED),
        _ = terminate.recv() => Err(128 + Signal::SIGTERM as u8),
    }
}

/// What a run holds, for how long it may (`--max-hold`), since when.
struct Held<'a> {
    resource: &'a str,
    started: Instant,
    max_hold: Option<Duration>,
}

/// Waits for the first of: the command's exit, the lock lost, `--max-hold`, a stop signal.
async fn until_ended(
    command: &mut Supervised,
    watchdogs: &[Watchdog],
    held: Held<'_>,
    (interrupt, terminate): &mut (StopSignal, StopSignal),
) -> Ended {
    // The lock is lost when any of its groups is (a set across Cluster slots has several).
    let mut lost = tokio::task::JoinSet::new();
    for watchdog in watchdogs {
        let context = watchdog.context();
        lost.spawn(async move { context.lost().await });
    }
    let resource = held.resource;
    tokio::select! {
        status = command.wait() => Ended::Exited(status.map_or(exit::CANNOT_RUN, status_code)),
        _ = lost.join_next() => {
            eprintln!("dlock: lock {resource:?} lost while the command ran; sending SIGTERM");
            Ended::Stopped(exit::LOST)
        }
        _ = held_for(held.started, held.max_hold) => {
            eprintln!("dlock: lock {resource:?} held for --max-hold; sending SIGTERM (the lock is kept until the command is gone)");
            Ended::Stopped(exit::LOST)
        }
        _ = interrupt.recv() => Ended::Stopped(exit::INTERRUPTED),
        _ = terminate.recv() => Ended::Stopped(128 + Signal::SIGTERM as u8),
    }
}

/// The end of a run: the command done with (`finish`) or stopped (`stop`, which returns once its
/// group is gone) while the watchdog still extends, so that at --max-hold as on a stop signal
/// the lease outlives the command; then the lock released. The exit code of `ended`.
async fn conclude(
    command: Supervised,
    ended: Ended,
    watchdogs: Vec<Watchdog>,
    guards: Vec<LockGuard>,
) -> u8 {
    let code = match ended {
        Ended::Exited(code) => {
            command.finish().await;
            code
        }
        Ended::Stopped(code) => {
            command.stop().await;
            code
        }
    };
    for watchdog in watchdogs {
        watchdog.stop().await;
    }
    for guard in guards {
        if let Err(e) = guard.release().await {
            eprintln!("dlock: release: {e} (the lock expires after its TTL)");
        }
    }
    code
}

/// Completes `cap` after `started`; never without a cap. dlock enforces --max-hold itself rather
/// than through the library's watchdog cap, which stops extending at once: a command slow to
/// stop (SIGTERM trapped, SIGKILL only after the grace) would then run on past the lease's end
/// beside the next holder.
async fn held_for(started: Instant, cap: Option<Duration>) {
    match cap.and_then(|cap| started.checked_add(cap)) {
        Some(until) => tokio::time::sleep_until(until.into()).await,
        None => std::future::pending().await,
    }
}

/// SIGINT and SIGTERM, caught so that dlock can stop the command and release first.
pub fn stop_signals() -> std::io::Result<(StopSignal, StopSignal)> {
    Ok((
        StopSignal::listen(Signal::SIGINT, SignalKind::interrupt())?,
        StopSignal::listen(Signal::SIGTERM, SignalKind::terminate())?,
    ))
}

/// A stop signal dlock listens for. SIGINT is not listened to when the process started with it
/// ignored: a non-interactive shell starts background jobs so (Ctrl-C is then meant for the
/// foreground job alone), and the convention, kept by shells and Python alike, is that such a
/// signal stays ignored. SIGTERM is always listened to: no shell ignores it for a job, it is how
/// a supervisor or a CI runner asks dlock to stop, and an ignored one inherited from some
/// `trap '' TERM` above would leave only SIGKILL, which neither stops the command gracefully nor
/// releases the lock. The command starts with every signal at its default either way
/// (`supervise::spawn`).
pub enum StopSignal {
    Listening(UnixSignal),
    Ignored,
}

impl StopSignal {
    fn listen(which: Signal, kind: SignalKind) -> std::io::Result<StopSignal> {
        if which == Signal::SIGINT && ignored_at_start(which) {
            return Ok(StopSignal::Ignored);
        }
        Ok(StopSignal::Listening(signal(kind)?))
    }

    /// Completes when the signal arrives; never, if it is ignored.
    pub async fn recv(&mut self) {
        match self {
            StopSignal::Listening(signal) => {
                signal.recv().await;
            }
            StopSignal::Ignored => std::future::pending().await,
        }
    }
}

/// Whether `which` is ignored now (read before any handler of dlock's is installed).
fn ignored_at_start(which: Signal) -> bool {
    use nix::libc;
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `current`, which is large
    // enough for it; nothing is changed.
    let read =
        unsafe { libc::sigaction(which as libc::c_int, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: sigaction filled `current` when it returned 0; zeroed is a valid sigaction too.
    read == 0 && unsafe { current.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// How the command's run ended: it exited by itself with this code, or dlock stopped it and
/// exits with this one.
enum Ended {
    Exited(u8),
    Stopped(u8),
}

/// Starts the command with the lock in its environment, supervised (`supervise::spawn`: it
/// cannot outlive dlock, and starts with every signal at its default action).
fn spawn(argv: &[String], guards: &[LockGuard], tokens: &[u64]) -> std::io::Result<Supervised> {
    let mut command = Command::new(&argv[0]);
    // DLOCK_TOKENS: one token per resource, in the order given (a set's one token repeated; a
    // set across Cluster slots: each resource's group token). DLOCK_TOKEN: the first of them.
    let words: Vec<String> = tokens.iter().map(u64::to_string).collect();
    if let Some(first) = guards.first() {
        command
            .env("DLOCK_OWNER", first.owner())
            .env("DLOCK_RESOURCE", first.resource());
    }
    command
        .args(&argv[1..])
        .env("DLOCK_TOKEN", words.first().cloned().unwrap_or_default())
        .env("DLOCK_TOKENS", words.join(" "))
        // The command needs the lock, not the nodes' password.
        .env_remove("DLOCK_PASSWORD");
    supervise::spawn(command)
}

/// The command's exit code, or 128 + signal like a shell.
pub fn status_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.wrapping_add(signal as u8),
        _ => exit::CANNOT_RUN,
    }
}
