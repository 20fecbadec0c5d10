//! `dlock run` and the stop signals: SIGTERM to the command when the lock is lost (even when dlock
//! started with SIGTERM ignored), Ctrl-C and SIGTERM while waiting or running, a SIGINT the
//! process started with ignored, the command's dispositions reset whatever dlock inherited, and
//! the lease kept at --max-hold until a command that ignores SIGTERM is gone.
//!
//! Each test sets the dispositions its `dlock` starts with, so the suite passes whatever its own
//! parent ignores (a background job of a non-interactive shell, nohup, some CI runners): the
//! dispositions a process ignores are inherited across fork and exec.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, signal, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

/// How `dlock` starts with SIGINT and SIGTERM.
#[derive(Clone, Copy)]
enum Stop {
    /// Both at their default action, as from an interactive shell.
    Default,
    /// SIGINT ignored, as in a background job of a non-interactive shell.
    IgnoringInterrupt,
    /// Both ignored, as under a supervisor's `trap '' INT TERM`.
    IgnoringBoth,
    /// SIGINT, SIGTERM, SIGQUIT and SIGUSR1 ignored, and SIGUSR2 blocked.
    IgnoringMany,
}

/// `dlock` against `servers`, started with the dispositions of `stop` and no standard input.
fn dlock(servers: &[Server], stop: Stop) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dlock"));
    command
        .env("DLOCK_NODES", urls(servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .stdin(Stdio::null());
    let (interrupt, terminate) = match stop {
        Stop::Default => (SigHandler::SigDfl, SigHandler::SigDfl),
        Stop::IgnoringInterrupt => (SigHandler::SigIgn, SigHandler::SigDfl),
        Stop::IgnoringBoth | Stop::IgnoringMany => (SigHandler::SigIgn, SigHandler::SigIgn),
    };
    let many = matches!(stop, Stop::IgnoringMany);
    // SAFETY: runs in the forked child before exec and only calls sigaction and sigprocmask,
    // which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            signal(Signal::SIGINT, interrupt).map_err(std::io::Error::from)?;
            signal(Signal::SIGTERM, terminate).map_err(std::io::Error::from)?;
            if many {
                for which in [Signal::SIGQUIT, Signal::SIGUSR1] {
                    signal(which, SigHandler::SigIgn).map_err(std::io::Error::from)?;
                }
                let mut usr2 = SigSet::empty();
                usr2.add(Signal::SIGUSR2);
                usr2.thread_block().map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    command
}

fn pid_of(child: &std::process::Child) -> Pid {
    Pid::from_raw(child.id() as i32)
}

#[test]
fn run_sends_sigterm_and_exits_5_when_the_lock_is_lost() {
    let mut servers = nodes(5);
    let marker = tempfile::tempdir().unwrap();
    let mark = marker.path().join("term");
    let script = format!(
        "trap 'echo got-term > {}; exit 0' TERM; sleep 30 & wait",
        mark.display()
    );
    let mut child = dlock(&servers, Stop::Default)
        .args(["run", "job", "--ttl", "900ms", "--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while token_on(&servers[4], "job").is_none() {
        assert!(Instant::now() < deadline, "dlock never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    for server in &mut servers[..3] {
        server.restart_empty();
    }
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(5));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(&mark).unwrap().trim(), "got-term");
}

/// dlock stops its command with SIGTERM (here at `--max-hold`), so the command starts with
/// SIGTERM at its default action even when dlock started with it ignored: a shell's `trap ...
/// TERM` then works (a non-interactive shell cannot trap a signal ignored at its start), and the
/// command does not run on without the lock until the SIGKILL 10 s later.
#[test]
fn a_sigterm_ignored_at_start_still_stops_the_command() {
    let servers = nodes(3);
    let marker = tempfile::tempdir().unwrap();
    let mark = marker.path().join("term");
    let script = format!(
        "trap 'echo got-term > {}; exit 0' TERM; sleep 30 & wait",
        mark.display()
    );
    let started = Instant::now();
    // Not `output()`: the script's own `sleep` would keep the pipes open to its end.
    let status = dlock(&servers, Stop::IgnoringBoth)
        .args(["run", "job", "--ttl", "300ms", "--max-hold", "600ms", "--"])
        .args(["sh", "-c", &script])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(status.code(), Some(5));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(std::fs::read_to_string(&mark).unwrap().trim(), "got-term");
    assert!(
        servers.iter().all(|s| token_on(s, "job").is_none()),
        "released"
    );
}

#[test]
fn interrupting_dlock_run_stops_the_command_and_releases() {
    let servers = nodes(3);
    for (signal, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143)] {
        let child = dlock(&servers, Stop::Default)
            .args(["run", "job", "--", "sleep", "30"])
            .spawn()
            .unwrap();
        // Signal only once the command runs: a signal that arrives mid-acquisition is the
        // subject of another test.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !has_child(child.id()) {
            assert!(Instant::now() < deadline, "dlock never started the command");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            token_on(&servers[0], "job").is_some(),
            "held while the command runs"
        );
        kill(pid_of(&child), signal).unwrap();
        let status = child.wait_with_output().unwrap().status;
        assert_eq!(status.code(), Some(code), "{signal}");
        assert!(
            servers.iter().all(|s| token_on(s, "job").is_none()),
            "released on {signal}"
        );
    }
}

#[test]
fn interrupting_a_waiting_dlock_run_withdraws_its_wait() {
    let servers = nodes(3);
    let held = dlock(&servers, Stop::Default)
        .args(["acquire", "job", "--ttl", "30s"])
        .output()
        .unwrap();
    assert_eq!(held.status.code(), Some(0));
    let holder: Vec<Option<u64>> = servers.iter().map(|s| token_on(s, "job")).collect();
    let child = dlock(&servers, Stop::Default)
        .args(["run", "job", "--wait", "30s", "--", "true"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !servers.iter().all(|s| waiters(s, "job") == 1) {
        assert!(Instant::now() < deadline, "dlock never queued");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(pid_of(&child), Signal::SIGINT).unwrap();
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(130));
    for (server, holder) in servers.iter().zip(holder) {
        assert_eq!(waiters(server, "job"), 0, "wait withdrawn");
        assert_eq!(token_on(server, "job"), holder, "the holder untouched");
    }
}

/// Whether process `pid` has a child process yet (the command `dlock run` started).
fn has_child(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .is_ok_and(|c| !c.trim().is_empty())
        })
}

/// dlock keeps the shell's convention for itself (a background job ignores Ctrl-C); its command
/// starts with SIGINT at its default all the same (`the_command_starts_with_every_signal_at_its_default`).
#[test]
fn a_sigint_ignored_at_start_stays_ignored_by_dlock_run() {
    let servers = nodes(3);
    let mut child = dlock(&servers, Stop::IgnoringInterrupt)
        .args(["run", "job", "--", "sleep", "30"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !has_child(child.id()) {
        assert!(Instant::now() < deadline, "dlock never started the command");
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = token_on(&servers[0], "job");
    assert!(held.is_some(), "held while the command runs");
    kill(pid_of(&child), Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "dlock run exited on a SIGINT it started with ignored"
    );
    assert_eq!(token_on(&servers[0], "job"), held, "still held");
    kill(pid_of(&child), Signal::SIGTERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(
        servers.iter().all(|s| token_on(s, "job").is_none()),
        "released on SIGTERM"
    );
}

/// The pid a command wrote to `path`, once it is there.
fn pid_in(path: &std::path::Path) -> Pid {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            return Pid::from_raw(pid);
        }
        assert!(
            Instant::now() < deadline,
            "the command never wrote {path:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn exit_within(child: &mut std::process::Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `pid` once it runs `sleep` (the shell before it has its own dispositions).
fn sleeping(pid: Pid) -> Pid {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default() != "sleep\n" {
        assert!(Instant::now() < deadline, "{pid} never ran sleep");
        std::thread::sleep(Duration::from_millis(10));
    }
    pid
}

/// A `SigIgn:` or `SigBlk:` mask of /proc/PID/status.
fn mask(pid: Pid, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    u64::from_str_radix(line[field.len()..].trim(), 16).unwrap()
}

/// Started ignoring SIGINT, SIGTERM, SIGQUIT and SIGUSR1 (a supervisor's `trap ''`, a
/// background job) with SIGUSR2 blocked, `run` and `elect` give their command every signal at
/// its default action, unblocked: what dlock sends it ends it, and it behaves as started by
/// itself. dlock itself still stops on SIGTERM: no shell ignores it for a job, and ignoring it
/// would leave only SIGKILL, which releases nothing.
#[test]
fn the_command_starts_with_every_signal_at_its_default() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    for (i, how) in [["run", "job"], ["elect", "leader"]].iter().enumerate() {
        let file = dir.path().join(format!("pid{i}"));
        let script = format!("echo $$ > {}; exec sleep 30", file.display());
        let mut child = dlock(&servers, Stop::IgnoringMany)
            .args(how)
            .args(["--", "sh", "-c", &script])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let command = sleeping(pid_in(&file));
        let (ignored, blocked) = (mask(command, "SigIgn:"), mask(command, "SigBlk:"));
        kill(pid_of(&child), Signal::SIGTERM).unwrap();
        let code = exit_within(&mut child, Duration::from_secs(5));
        let _ = kill(command, Signal::SIGKILL);
        assert_eq!(ignored, 0, "{how:?}: the command ignores {ignored:#x}");
        assert_eq!(blocked, 0, "{how:?}: the command blocks {blocked:#x}");
        assert_eq!(
            code,
            Some(143),
            "{how:?}: SIGTERM to a dlock that started ignoring it"
        );
    }
}

/// At --max-hold dlock stops its command, and keeps the lease until the command is gone: one
/// that ignores SIGTERM runs for the whole grace (10 s) until its SIGKILL, and the next holder
/// must not start beside it (with the TTL of 300 ms, the lease would end long before).
#[test]
fn at_max_hold_the_lock_is_kept_until_a_command_ignoring_sigterm_is_gone() {
    let servers = nodes(3);
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, seen) = (dir.path().join("first"), dir.path().join("seen"));
    let stubborn = format!(
        "trap '' TERM; echo $$ > {}; exec sleep 60",
        pid_file.display()
    );
    let started = Instant::now();
    let mut first = dlock(&servers, Stop::Default)
        .args(["run", "job", "--ttl", "300ms", "--max-hold", "500ms"])
        .args(["--", "sh", "-c", &stubborn])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stubborn = pid_in(&pid_file);
    let look = format!(
        "if kill -0 {stubborn} 2>/dev/null; then echo beside; else echo after; fi > {}",
        seen.display()
    );
    let mut next = dlock(&servers, Stop::Default)
        .args(["run", "job", "--ttl", "300ms", "--wait", "30s"])
        .args(["--", "sh", "-c", &look])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first_code = exit_within(&mut first, Duration::from_secs(20));
    let next_code = exit_within(&mut next, Duration::from_secs(10));
    let _ = kill(stubborn, Signal::SIGKILL);
    assert_eq!(first_code, Some(5), "held past --max-hold");
    assert!(
        started.elapsed() >= Duration::from_secs(10),
        "the stubborn command got its grace"
    );
    assert_eq!(next_code, Some(0));
    let seen = std::fs::read_to_string(&seen).unwrap_or_default();
    assert_eq!(
        seen.trim(),
        "after",
        "the next holder ran beside the stubborn command"
    );
}
