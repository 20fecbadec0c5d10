//! A supervisor that dies takes its command with it: `dlock run` killed with SIGKILL (the OOM
//! killer, `kill -9`) can neither stop its command nor renew its lock, which expires one TTL later;
//! the command and anything it started must not run on beside the next holder.

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long the kernel and dlock's guard may take to end the command once dlock is gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The pid written to `path` by the command, once it is there.
fn pid_in(path: &Path) -> Pid {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            return Pid::from_raw(pid);
        }
        assert!(
            Instant::now() < deadline,
            "the command never wrote {path:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` still runs (a zombie waiting for init to reap it has stopped running).
fn running(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may contain spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn gone_within(pid: Pid, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while running(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `dlock run job OPTIONS -- sh -c SCRIPT` against `servers`, patient, with no input and no
/// output: a process a test leaves behind must not hold the test binary's stdout open (the
/// harness's `| tee` would wait on it for as long as it lives).
fn dlock_run(servers: &[Server], options: &[&str], script: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dlock"));
    command
        .env("DLOCK_NODES", urls(servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(["run", "job"])
        .args(options)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

#[test]
fn a_killed_dlock_run_takes_its_command_and_grandchildren_with_it() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let (child_file, grandchild_file) = (dir.path().join("child"), dir.path().join("grandchild"));
    // The grandchild ignores SIGTERM and SIGHUP: only a kill that cannot be refused ends it.
    let script = format!(
        "trap '' TERM HUP; sleep 300 & echo $! > {}; echo $$ > {}; wait",
        grandchild_file.display(),
        child_file.display()
    );
    let mut dlock = dlock_run(&servers, &["--ttl", "30s"], &script)
        .spawn()
        .unwrap();
    let (child, grandchild) = (pid_in(&child_file), pid_in(&grandchild_file));
    assert!(running(child) && running(grandchild));
    let killed = kill(Pid::from_raw(dlock.id() as i32), Signal::SIGKILL);
    let _ = dlock.wait();
    let (child_gone, grandchild_gone) = (
        gone_within(child, GONE_WITHIN),
        gone_within(grandchild, GONE_WITHIN),
    );
    // Clean up before asserting, so a failure leaves no sleep behind.
    for pid in [child, grandchild] {
        let _ = kill(pid, Signal::SIGKILL);
    }
    killed.unwrap();
    assert!(
        child_gone,
        "the command still runs after dlock run was killed"
    );
    assert!(
        grandchild_gone,
        "the command's child still runs after dlock run was killed"
    );
}

/// `dlock run` of a command that starts `background` in a subshell and waits, stopped by
/// `--max-hold` 600 ms in: the running dlock, the background process's pid (once written) and
/// the folder it was written in (kept until the test ends).
fn stopped_at_max_hold(
    servers: &[Server],
    background: &str,
) -> (std::process::Child, Pid, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("background");
    let script = format!("({background}) & echo $! > {}; wait", file.display());
    let dlock = dlock_run(servers, &["--ttl", "300ms", "--max-hold", "600ms"], &script)
        .spawn()
        .unwrap();
    let pid = pid_in(&file);
    (dlock, pid, dir)
}

/// A run dlock stops (here at `--max-hold`) stops the command's whole group: SIGTERM, then
/// SIGKILL for what is left once the command exited, so a grandchild ignoring SIGTERM goes too.
#[test]
fn a_stopped_run_ends_grandchildren_that_ignore_sigterm() {
    let servers = nodes(1);
    let (mut dlock, grandchild, _dir) =
        stopped_at_max_hold(&servers, "trap '' TERM; exec sleep 300");
    let status = dlock.wait().unwrap();
    let gone = gone_within(grandchild, GONE_WITHIN);
    let _ = kill(grandchild, Signal::SIGKILL);
    assert_eq!(status.code(), Some(5));
    assert!(gone, "a grandchild outlived the stop of its run");
}

/// A process that left the command's group (`setsid`, as a daemon does) is out of reach of the
/// group's SIGKILL: a stopped run still ends it, and before dlock exits (releasing the lock).
#[test]
fn a_stopped_run_ends_what_left_the_group_before_it_releases() {
    let servers = nodes(1);
    // Not a group leader in the subshell, setsid makes its session without forking: the pid
    // written is the sleep's. It ignores SIGTERM; its parent (the subshell) has exited.
    let (mut dlock, escaped, _dir) =
        stopped_at_max_hold(&servers, "trap '' TERM; exec setsid sleep 300");
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_of(escaped) != escaped && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        group_of(escaped),
        escaped,
        "setsid gave it a group of its own"
    );
    let status = dlock.wait().unwrap();
    let gone_at_exit = !running(escaped);
    let _ = kill(escaped, Signal::SIGKILL);
    assert_eq!(status.code(), Some(5));
    assert!(
        gone_at_exit,
        "a process that left the group outlived its run"
    );
}

/// The group's leader: field 5 of /proc/PID/stat.
fn group_of(pid: Pid) -> Pid {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    Pid::from_raw(rest.split_whitespace().nth(2).unwrap().parse().unwrap())
}

/// A command that exits by itself leaves what it started in the background running (as under
/// flock(1)), and dlock's guard exits with dlock: nothing of dlock's stays behind.
#[test]
fn after_a_normal_exit_the_guard_is_gone_and_background_work_stays() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let (child_file, grandchild_file) = (dir.path().join("child"), dir.path().join("grandchild"));
    let script = format!(
        "sleep 300 & echo $! > {}; echo $$ > {}; sleep 0.3",
        grandchild_file.display(),
        child_file.display()
    );
    let status = dlock_run(&servers, &[], &script).status().unwrap();
    let grandchild = pid_in(&grandchild_file);
    let guard = group_of(grandchild);
    let (guard_gone, background_runs) = (gone_within(guard, GONE_WITHIN), running(grandchild));
    let _ = kill(grandchild, Signal::SIGKILL);
    assert_eq!(status.code(), Some(0));
    assert_ne!(guard, grandchild, "the command runs in the guard's group");
    assert!(guard_gone, "the guard outlived dlock");
    assert!(
        background_runs,
        "background work was killed after a normal exit"
    );
}

/// The kernel's part alone: with the guard killed too (`kill -9` of both), the command itself
/// still ends with dlock (PR_SET_PDEATHSIG). Its own children are then the guard's part only.
#[cfg(target_os = "linux")]
#[test]
fn without_its_guard_a_killed_dlock_run_still_takes_its_command() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let child_file = dir.path().join("child");
    let script = format!(
        "trap '' TERM HUP; echo $$ > {}; exec sleep 300",
        child_file.display()
    );
    let mut dlock = dlock_run(&servers, &["--ttl", "30s"], &script)
        .spawn()
        .unwrap();
    let child = pid_in(&child_file);
    let guard = group_of(child);
    assert_ne!(guard, child, "the command runs in the guard's group");
    kill(guard, Signal::SIGKILL).unwrap();
    let killed = kill(Pid::from_raw(dlock.id() as i32), Signal::SIGKILL);
    let _ = dlock.wait();
    let gone = gone_within(child, GONE_WITHIN);
    let _ = kill(child, Signal::SIGKILL);
    killed.unwrap();
    assert!(
        gone,
        "the command still runs after dlock run and its guard were killed"
    );
}
