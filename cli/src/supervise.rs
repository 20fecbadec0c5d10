//! The command that `dlock run` supervises, and what keeps it from outliving dlock.
//!
//! dlock stops its command itself when it can (SIGTERM, then SIGKILL after a grace period). A dlock
//! killed with SIGKILL (the OOM killer, `kill -9`) can do nothing, and nothing renews its lease,
//! which ends one TTL later: the next holder would start beside a command still running. flock(1)
//! is safe there because its child inherits the lock; dlock must end the command instead:
//!
//! - the command gets SIGKILL from the kernel when dlock dies (Linux `PR_SET_PDEATHSIG`);
//! - the command and whatever it starts run in a process group of their own, led by a *guard*: a
//!   second `dlock` process that reads a pipe from its parent. If the pipe ends without the byte
//!   that says the command was done with (dlock died), the guard SIGKILLs its group, so the
//!   command's children and grandchildren, which `PR_SET_PDEATHSIG` does not reach, go too.
//!
//! SIGKILL rather than SIGTERM: with dlock gone nothing renews the lease, and nothing would be
//! left to escalate if the command trapped SIGTERM and ran past the lease's end. A graceful stop
//! is what dlock gives while it is alive to wait for it (`stop`).

use std::io::Read;
use std::os::fd::BorrowedFd;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use std::process::ExitStatus;

use nix::sys::signal::{kill, raise, signal, SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, setpgid, tcgetpgrp, tcsetpgrp, Pid};
use tokio::io::AsyncWriteExt;

use crate::descendants;
use tokio::process::{Child, ChildStdin, Command};
use tokio::signal::unix::{signal as listen, SignalKind};

/// The name (argv[0]) a guard runs under: `main` checks it before parsing any argument.
const GUARD_ARG0: &str = "dlock-guard";

/// What dlock writes to its guard when the command is done with (any other end means it died).
const DONE: &[u8] = b"done\n";

/// How long a command may take to exit after SIGTERM before its group gets SIGKILL
/// (docs/cli.md states it).
pub const GRACE: Duration = Duration::from_secs(10);

/// How often `stop` looks whether the group's last process has ended after its SIGKILL.
const GONE_POLL: Duration = Duration::from_millis(10);

/// Signals the guard ignores: the keyboard's (it shares the command's group, which may own the
/// terminal) and the SIGTERM `stop` sends to the whole group.
const GUARD_IGNORES: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGHUP,
    Signal::SIGTERM,
];

/// A running command, its process group and the guard leading it.
pub struct Supervised {
    child: Child,
    group: Pid,
    guard: Guard,
    /// Whether the command's group holds the terminal (dlock was, or was put back as, the
    /// foreground job).
    foreground: bool,
}

struct Guard {
    process: Child,
    pipe: ChildStdin,
}

/// Whether this process is a guard (started by `spawn`, not by a user).
pub fn is_guard() -> bool {
    std::env::args_os()
        .next()
        .is_some_and(|arg0| arg0 == GUARD_ARG0)
}

/// A guard's whole life: wait for its parent's word, and kill the group if it never comes.
pub fn guard() -> u8 {
    let mut byte = [0u8; 1];
    let word = loop {
        match std::io::stdin().read(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other,
        }
    };
    // Only as the leader of its group, as `spawn_guard` starts it: a process merely named like
    // a guard must not kill the group it happens to run in.
    let leads = getpgrp() == nix::unistd::getpid();
    if leads && !matches!(word, Ok(1)) {
        // Pid 0: every process of the caller's group, the guard included.
        let _ = kill(Pid::from_raw(0), Signal::SIGKILL);
    }
    0
}

/// Starts `command` (already given its arguments and environment) supervised: in the guard's
/// process group, killed by the kernel if dlock dies, and holding the terminal if dlock did.
pub fn spawn(mut command: Command) -> std::io::Result<Supervised> {
    crate::descendants::adopt_orphans();
    let mut guard = spawn_guard()?;
    let Some(group) = guard.process.id().map(|pid| Pid::from_raw(pid as i32)) else {
        return Err(std::io::Error::other("the guard exited at once"));
    };
    let foreground = owns_terminal();
    let parent = nix::unistd::getpid();
    // SAFETY: runs in the forked child before exec; setpgid, tcsetpgrp, sigprocmask, sigaction,
    // prctl and getppid are async-signal-safe system calls, and nothing here allocates.
    unsafe {
        command.pre_exec(move || child_setup(group, foreground, parent));
    }
    match command.kill_on_drop(true).spawn() {
        Ok(child) => Ok(Supervised {
            child,
            group,
            guard,
            foreground,
        }),
        Err(e) => {
            // Dropped, the killed guard is reaped by tokio in the background.
            let _ = guard.process.start_kill();
            Err(e)
        }
    }
}

/// In the command's process, before exec. Every signal starts at its default action and
/// unblocked, whatever dlock inherited (a supervisor's `trap '' INT TERM`, a background job's
/// ignored SIGINT and SIGQUIT): dlock stops the command with SIGTERM, and an ignored SIGTERM
/// (kept across exec, unlike a handler) would leave it running on without the lock; the
/// others, so that the command behaves as it would started by itself. The command's group is
/// not the terminal's foreground unless dlock's was, so the keyboard's signals still reach it
/// only when they reached dlock.
fn child_setup(group: Pid, foreground: bool, parent: Pid) -> std::io::Result<()> {
    setpgid(Pid::from_raw(0), group)?;
    if foreground {
        // From a background group, tcsetpgrp raises SIGTTOU unless it is blocked.
        with_ttou_blocked(|| tcsetpgrp(stdin_fd(), group))?;
    }
    die_with(parent)?;
    default_dispositions();
    SigSet::empty().thread_set_mask()?;
    Ok(())
}

/// Sets every signal to its default action: only an ignored one would outlive the exec (a
/// caught one is reset by exec itself). On Linux through the system call itself, for every
/// number: the C library refuses the ones it reserves (32 and 33 in glibc), which an ignoring
/// parent passes on all the same; a zeroed kernel `sigaction` is the default action, whatever
/// the architecture's layout, and a number that cannot be changed (SIGKILL, SIGSTOP) fails
/// harmlessly.
#[cfg(target_os = "linux")]
fn default_dispositions() {
    use nix::libc;
    // Larger than the kernel's `struct sigaction` on every architecture.
    let default = [0u64; 4];
    // The kernel's sigset_t: 64 signals.
    let set_size: libc::size_t = 8;
    for number in 1..=64 as libc::c_long {
        // SAFETY: rt_sigaction only reads `default` (a valid, zeroed action); it is
        // async-signal-safe and nothing here allocates.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                number,
                default.as_ptr(),
                std::ptr::null_mut::<libc::c_void>(),
                set_size,
            );
        }
    }
}

/// Elsewhere every signal the C library lets a program change.
#[cfg(not(target_os = "linux"))]
fn default_dispositions() {
    for which in Signal::iterator() {
        // SAFETY: the default action runs no code of this process.
        let _ = unsafe { signal(which, SigHandler::SigDfl) };
    }
}

/// SIGKILL when the thread that forked this process ends: dlock's main thread, as its runtime
/// is single-threaded, so in effect when dlock ends. dlock may have died before the prctl; then
/// this process was already reparented and must not run the command.
#[cfg(target_os = "linux")]
fn die_with(parent: Pid) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid() != parent {
        return Err(std::io::Error::other(
            "dlock ended before its command started",
        ));
    }
    Ok(())
}

/// Elsewhere the guard alone ends the command's group.
#[cfg(not(target_os = "linux"))]
fn die_with(_parent: Pid) -> std::io::Result<()> {
    Ok(())
}

/// The guard: this executable again, named `GUARD_ARG0`, leading a new process group, reading
/// a pipe whose other end only dlock holds (close-on-exec, so the command never inherits it).
fn spawn_guard() -> std::io::Result<Guard> {
    let exe = if cfg!(target_os = "linux") {
        // Still runs when the binary was replaced or deleted since dlock started.
        std::path::PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe()?
    };
    let mut command = std::process::Command::new(exe);
    command
        .arg0(GUARD_ARG0)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: runs in the forked child before exec; setpgid and sigaction are async-signal-safe
    // and nothing here allocates. Ignored dispositions survive the exec, so the guard ignores
    // these signals from its first instruction.
    unsafe {
        command.pre_exec(|| {
            setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
            for which in GUARD_IGNORES {
                signal(which, SigHandler::SigIgn)?;
            }
            Ok(())
        });
    }
    let mut process = Command::from(command).spawn()?;
    let pipe = process
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the guard has no pipe"))?;
    Ok(Guard { process, pipe })
}

/// Whether dlock is the foreground job of the terminal on its standard input: then the command
/// gets the terminal (to read it without SIGTTIN, and to get Ctrl-C as if run by the shell).
fn owns_terminal() -> bool {
    tcgetpgrp(stdin_fd()).is_ok_and(|owner| owner == getpgrp())
}

/// Descriptor 0 without `std::io::stdin()`, whose first use allocates (not allowed between fork
/// and exec).
fn stdin_fd() -> BorrowedFd<'static> {
    // SAFETY: descriptor 0 is only borrowed for one call; a closed one makes that call fail
    // with EBADF, nothing worse.
    unsafe { BorrowedFd::borrow_raw(0) }
}

fn with_ttou_blocked<T>(f: impl FnOnce() -> nix::Result<T>) -> nix::Result<T> {
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut before = SigSet::empty();
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut before))?;
    let result = f();
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None)?;
    result
}

impl Supervised {
    /// The command's exit. Meanwhile, holding the terminal, a command that stops (Ctrl-Z goes
    /// to its group only) stops dlock too, so the shell sees its job stopped and takes the
    /// terminal back; `fg` or `bg` continues dlock, which continues the command.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if !self.foreground {
            return self.child.wait().await;
        }
        let mut children = listen(SignalKind::child())?;
        loop {
            tokio::select! {
                status = self.child.wait() => return status,
                _ = children.recv() => self.follow_a_stop(),
            }
        }
    }

    fn follow_a_stop(&mut self) {
        let Some(pid) = self.child.id() else {
            return;
        };
        // WNOWAIT: only a look; the exit stays for `Child::wait` to collect.
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        let id = Id::Pid(Pid::from_raw(pid as i32));
        if !matches!(waitid(id, flags), Ok(WaitStatus::Stopped(..))) {
            return;
        }
        let _ = with_ttou_blocked(|| tcsetpgrp(stdin_fd(), getpgrp()));
        // SIGSTOP rather than SIGTSTP, which dlock might have inherited ignored.
        let _ = raise(Signal::SIGSTOP);
        // Continued: by `fg` with the terminal back, or by `bg` without it.
        self.foreground = owns_terminal();
        if self.foreground {
            let _ = with_ttou_blocked(|| tcsetpgrp(stdin_fd(), self.group));
        }
        let _ = kill(Pid::from_raw(-self.group.as_raw()), Signal::SIGCONT);
    }

    /// SIGTERM to the command's whole group, then SIGKILL to what is left of it once the command
    /// exited or after [`GRACE`]; returns once no process of the group is left: nothing of it
    /// runs on without the lock, which the caller keeps extended until then.
    /// Processes that left the group (`setsid`) get the same signals (`descendants`).
    pub async fn stop(mut self) {
        let guard = self.guard.process.id().map(|pid| Pid::from_raw(pid as i32));
        let _ = kill(Pid::from_raw(-self.group.as_raw()), Signal::SIGTERM);
        descendants::signal(Signal::SIGTERM, guard);
        let _ = tokio::time::timeout(GRACE, self.child.wait()).await;
        let _ = kill(Pid::from_raw(-self.group.as_raw()), Signal::SIGKILL);
        let _ = self.child.wait().await;
        // The guard leads the group: SIGKILLed with it, it is gone once reaped.
        let _ = self.guard.process.wait().await;
        group_ended(self.group).await;
        descendants::ended(None).await;
        self.end(false).await;
    }

    /// After the command exited by itself: what it left running in the background stays (as
    /// under flock(1)); the guard is told so and exits.
    pub async fn finish(self) {
        self.end(true).await;
    }

    async fn end(mut self, tell_guard: bool) {
        if tcgetpgrp(stdin_fd()).is_ok_and(|owner| owner == self.group) {
            let _ = with_ttou_blocked(|| tcsetpgrp(stdin_fd(), getpgrp()));
        }
        if tell_guard {
            let _ = self.guard.pipe.write_all(DONE).await;
        }
        drop(self.guard.pipe);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.guard.process.wait()).await;
        let guard = self.guard.process.id().map(|pid| Pid::from_raw(pid as i32));
        descendants::reap_adopted(guard);
    }
}

/// Returns once no process of `group` runs: a SIGKILLed process may take a moment to end (one
/// in the middle of a write to a slow disk ends only when the write does), and the lock must
/// outlive it. Zombies count as ended: they run nothing, and the ones reparented to an init
/// that never reaps would otherwise keep dlock waiting for ever.
async fn group_ended(group: Pid) {
    let started = std::time::Instant::now();
    let mut told = false;
    while group_runs(group) {
        if !told && started.elapsed() >= GRACE {
            eprintln!("dlock: the command's processes got SIGKILL and are still ending; the lock stays held until they are gone");
            told = true;
        }
        tokio::time::sleep(GONE_POLL).await;
    }
}

/// Whether a process of `group` runs (not a zombie): read from /proc, where zombies show.
#[cfg(target_os = "linux")]
fn group_runs(group: Pid) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return kill(Pid::from_raw(-group.as_raw()), None).is_ok();
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .any(|entry| {
            std::fs::read_to_string(entry.path().join("stat"))
                .is_ok_and(|stat| live_member(&stat, group))
        })
}

/// Elsewhere, any process of the group, zombies included.
#[cfg(not(target_os = "linux"))]
fn group_runs(group: Pid) -> bool {
    kill(Pid::from_raw(-group.as_raw()), None).is_ok()
}

/// Whether a /proc/PID/stat line is of a live process of `group`: after the command name (in
/// parentheses, and may hold anything) come the state and then the parent, the group.
#[cfg(target_os = "linux")]
fn live_member(stat: &str, group: Pid) -> bool {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let (state, _parent, pgrp) = (fields.next(), fields.next(), fields.next());
    let live = state.is_some_and(|s| !matches!(s, "Z" | "X" | "x"));
    live && pgrp.and_then(|g| g.parse::<i32>().ok()) == Some(group.as_raw())
}
