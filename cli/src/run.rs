//! `dlock run`: flock(1) for a fleet.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use dlock_client::{LockGuard, LockManager, LockSet, Resource, Watchdog};
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
    let (resource, members) = match &target {
        Target::One(one) => (one.name.to_string(), 1),
        Target::Set(set) => (set.label(), set.names().len()),
    };
    let guard = match take(manager, target, (ttl, wait), quiet, &mut stops).await {
        Ok(guard) => guard,
        Err(code) => return code,
    };
    // DLOCK_TOKEN leaves dlock only committed (a no-wait hold commits it now).
    let token = match guard.token().await {
        Ok(token) => token,
        Err(e) => {
            eprintln!("dlock: {e}");
            let _ = guard.release().await;
            return exit::LOST;
        }
    };
    let started = Instant::now();
    let mut command = match spawn(argv, &guard, (token, members)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("dlock: cannot run {:?}: {e}", argv[0]);
            let _ = guard.release().await;
            return exit::CANNOT_RUN;
        }
    };
    let watchdog = guard.watchdog(ttl);
    let held = Held {
        resource: &resource,
        started,
        max_hold,
    };
    let ended = until_ended(&mut command, &watchdog, held, &mut stops).await;
    conclude(command, ended, watchdog, guard).await
}

/// The lock, or the exit code: its error's, or a stop signal's that came during the wait.
async fn take(
    manager: &LockManager,
    target: Target<'_>,
    times: (Duration, Duration),
    quiet: bool,
    (interrupt, terminate): &mut (StopSignal, StopSignal),
) -> Result<LockGuard, u8> {
    let acquiring = async {
        match &target {
            Target::One(one) => crate::progress::lock(manager, *one, times, quiet).await,
            Target::Set(set) if times.1.is_zero() => manager.try_lock_all(set, times.0).await,
            Target::Set(set) => manager.lock_all(set, times.0, times.1).await,
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
    watchdog: &Watchdog,
    held: Held<'_>,
    (interrupt, terminate): &mut (StopSignal, StopSignal),
) -> Ended {
    let lock = watchdog.context();
    let resource = held.resource;
    tokio::select! {
        status = command.wait() => Ended::Exited(status.map_or(exit::CANNOT_RUN, status_code)),
        _ = lock.lost() => {
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
async fn conclude(command: Supervised, ended: Ended, watchdog: Watchdog, guard: LockGuard) -> u8 {
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
    watchdog.stop().await;
    if let Err(e) = guard.release().await {
        eprintln!("dlock: release: {e} (the lock expires after its TTL)");
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
fn spawn(
    argv: &[String],
    guard: &LockGuard,
    (token, members): (u64, usize),
) -> std::io::Result<Supervised> {
    let mut command = Command::new(&argv[0]);
    // A set holds one token for every member (docs/multi.md): DLOCK_TOKENS lists it once per
    // resource, in the order given, for scripts that index it by resource.
    let tokens = vec![token.to_string(); members].join(" ");
    command
        .args(&argv[1..])
        .env("DLOCK_TOKEN", token.to_string())
        .env("DLOCK_TOKENS", tokens)
        .env("DLOCK_OWNER", guard.owner())
        .env("DLOCK_RESOURCE", guard.resource())
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
