//! `dlock elect`, `dlock leader` (and, with the module's OBSERVE, `dlock observe`) against real
//! nodes: the command runs only while leader with its epoch in the environment, is stopped when
//! leadership is lost, campaigns again unless --once, dies with a killed dlock, and bad input
//! exits 2 before any node is asked.

mod common;
use common::*;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// `dlock elect NAME OPTIONS -- sh -c SCRIPT`, with no input and no output (a process a test
/// leaves behind must not hold the test binary's stdout).
fn elect(servers: &[Server], name: &str, options: &[&str], script: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", urls(servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(["elect", name])
        .args(options)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dlock elect")
}

/// The lines of `path` once it has at least `n` of them.
fn lines_in(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(String::from).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{path:?} has {lines:?}, expected {n} lines"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
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

fn running(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

#[test]
fn the_leader_runs_with_its_epoch_and_resigns_when_done() {
    let servers = nodes(1);
    let out = dlock(&servers, &["leader", "jobs"]);
    assert_eq!(out.status.code(), Some(6), "nobody leads yet");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("env");
    let script = format!(
        "echo \"$DLOCK_EPOCH $DLOCK_TOKEN $DLOCK_ELECTION $DLOCK_VALUE\" > {}; exit 3",
        file.display()
    );
    let out = dlock(
        &servers,
        &[
            "elect",
            "jobs",
            "--value",
            "10.0.0.1:80",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "the command's own code");
    let seen = lines_in(&file, 1).remove(0);
    let words: Vec<&str> = seen.split(' ').collect();
    assert_eq!(words[0], words[1], "DLOCK_TOKEN is the epoch");
    assert!(words[0].parse::<u64>().unwrap() > 0);
    assert_eq!(&words[2..], ["jobs", "10.0.0.1:80"]);
    let out = dlock(&servers, &["leader", "jobs"]);
    assert_eq!(
        out.status.code(),
        Some(6),
        "resigned when the command exited"
    );
}

#[test]
fn leader_prints_epoch_id_and_value() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("epoch");
    let script = format!("echo $DLOCK_EPOCH > {}; exec sleep 30", file.display());
    let mut leading = elect(&servers, "svc", &["--value", "a b"], &script);
    let epoch = lines_in(&file, 1).remove(0);
    let out = dlock(&servers, &["leader", "svc"]);
    let _ = leading.kill();
    let _ = leading.wait();
    assert_eq!(out.status.code(), Some(0));
    let printed = text(&out.stdout);
    let words: Vec<&str> = printed.splitn(3, ' ').collect();
    assert_eq!((words[0], words[2]), (epoch.as_str(), "a b"), "{printed}");
    assert_eq!(words[1].len(), 32 + 2, "the candidate id: {printed}");
}

/// Leadership taken away (forced release, then another holder): the command gets SIGTERM; with
/// --once dlock exits 5, else it campaigns again and runs the command once more when elected.
#[test]
fn lost_leadership_stops_the_command_then_campaigns_again_unless_once() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("terms");
    let script = format!("echo $DLOCK_EPOCH >> {}; exec sleep 30", file.display());
    let mut once = elect(
        &servers,
        "once",
        &["--ttl", "900ms", "--once"],
        &script.replace("terms", "once"),
    );
    let mut again = elect(&servers, "again", &["--ttl", "900ms"], &script);
    lines_in(&dir.path().join("once"), 1);
    let first = lines_in(&file, 1).remove(0);
    let mut c = servers[0].conn();
    for name in ["once", "again"] {
        let _: i64 = redis::cmd("DLOCK.FORCERELEASE")
            .arg(name)
            .query(&mut c)
            .unwrap();
    }
    let _: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
        .arg(&["once", "thief", "60000"])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        wait_exit(&mut once, Duration::from_secs(5)),
        Some(5),
        "--once: exit 5"
    );
    let terms = lines_in(&file, 2);
    assert!(
        terms[1].parse::<u64>().unwrap() > first.parse().unwrap(),
        "a new epoch: {terms:?}"
    );
    kill(Pid::from_raw(again.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(wait_exit(&mut again, Duration::from_secs(15)), Some(143));
}

#[test]
fn a_killed_dlock_elect_takes_its_command_with_it() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 300", file.display());
    let mut leading = elect(&servers, "k", &["--ttl", "30s"], &script);
    let pid = Pid::from_raw(lines_in(&file, 1)[0].parse().unwrap());
    leading.kill().unwrap();
    let _ = leading.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = running(pid);
    let _ = kill(pid, Signal::SIGKILL);
    assert!(!survived, "the command outlived its killed dlock elect");
}

#[test]
fn a_second_candidate_takes_over_when_the_first_is_done() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("log");
    let first = format!("echo first $DLOCK_EPOCH >> {}; sleep 1", file.display());
    let second = format!("echo second $DLOCK_EPOCH >> {}", file.display());
    let mut a = elect(&servers, "turns", &[], &first);
    lines_in(&file, 1);
    let mut b = elect(&servers, "turns", &[], &second);
    assert_eq!(wait_exit(&mut a, Duration::from_secs(10)), Some(0));
    assert_eq!(wait_exit(&mut b, Duration::from_secs(10)), Some(0));
    let log = lines_in(&file, 2);
    let epoch = |line: &str| line.split(' ').nth(1).unwrap().parse::<u64>().unwrap();
    assert!(
        log[0].starts_with("first") && log[1].starts_with("second"),
        "{log:?}"
    );
    assert!(epoch(&log[1]) > epoch(&log[0]));
}

#[test]
fn bad_input_exits_2_before_any_node_is_asked() {
    let unreachable = Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", "redis://127.0.0.1:1")
        .stdin(Stdio::null())
        .args(["elect", "", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(
        unreachable.status.code(),
        Some(2),
        "{}",
        text(&unreachable.stderr)
    );
    let long = "v".repeat(201);
    for args in [
        &["elect", "e", "--value", long.as_str(), "--", "true"][..],
        &["elect", "e", "--ttl", "0s", "--", "true"],
        &["elect", "e"],
        &["leader", ""],
        &["observe", ""],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_dlock"))
            .env("DLOCK_NODES", "redis://127.0.0.1:1")
            .stdin(Stdio::null())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn observe_prints_each_change_then_exits_after_count() {
    let servers = nodes(1);
    let observe = |json: bool| {
        let mut args = vec!["observe", "seen", "--count", "3"];
        if json {
            args.push("--json");
        }
        Command::new(env!("CARGO_BIN_EXE_dlock"))
            .env("DLOCK_NODES", urls(&servers).join(","))
            .env("DLOCK_TIMEOUT", PATIENT)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (plain, json) = (observe(false), observe(true));
    std::thread::sleep(Duration::from_millis(500));
    let out = dlock(
        &servers,
        &[
            "elect",
            "seen",
            "--value",
            "v 1",
            "--",
            "sh",
            "-c",
            "echo $DLOCK_EPOCH; sleep 0.3",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let epoch = text(&out.stdout);
    let plain = plain.wait_with_output().unwrap();
    let lines: Vec<String> = text(&plain.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0], "none");
    assert!(
        lines[1].starts_with(&format!("{epoch} ")) && lines[1].ends_with(" v 1"),
        "{lines:?}"
    );
    assert_eq!(lines[2], "none");
    let json = json.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], serde_json::json!({"leader": null}));
    assert_eq!(lines[1]["leader"]["epoch"], serde_json::json!(epoch));
    assert_eq!(lines[1]["leader"]["value"], serde_json::json!("v 1"));
    assert_eq!(lines[2], serde_json::json!({"leader": null}));
}

/// A leader frozen past its lease (its dlock and its command) while another is elected: at
/// SIGCONT, dlock finds leadership lost, stops its command and exits 5 (--once).
#[test]
fn a_paused_leader_stops_its_command_when_it_resumes() {
    let servers = nodes(1);
    let dir = tempfile::tempdir().unwrap();
    let (a_file, b_file) = (dir.path().join("a"), dir.path().join("b"));
    let script = |f: &Path| format!("echo $$ > {}; exec sleep 30", f.display());
    let mut a = elect(
        &servers,
        "frozen",
        &["--ttl", "600ms", "--once"],
        &script(&a_file),
    );
    let command = Pid::from_raw(lines_in(&a_file, 1)[0].parse().unwrap());
    let dlock_a = Pid::from_raw(a.id() as i32);
    kill(dlock_a, Signal::SIGSTOP).unwrap();
    kill(command, Signal::SIGSTOP).unwrap();
    let mut b = elect(&servers, "frozen", &["--ttl", "10s"], &script(&b_file));
    lines_in(&b_file, 1); // elected once a's lease ended
    kill(command, Signal::SIGCONT).unwrap();
    kill(dlock_a, Signal::SIGCONT).unwrap();
    let code = wait_exit(&mut a, Duration::from_secs(5));
    let _ = kill(Pid::from_raw(b.id() as i32), Signal::SIGTERM);
    let _ = wait_exit(&mut b, Duration::from_secs(15));
    let still = running(command);
    let _ = kill(command, Signal::SIGKILL);
    assert_eq!(code, Some(5), "leadership lost while paused");
    assert!(!still, "the paused leader's command was stopped");
}
