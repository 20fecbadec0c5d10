//! One server given as two nodes (issue 48, finding 6): `--nodes A,A',X` with A' the same
//! server as A under another name made a quorum of one real server, and two `dlock` processes
//! held one lock at once. Now every such call exits 2, says which nodes are one server, runs no
//! command and leaves nothing held.

mod common;
use common::*;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `dlock ARGS` over `nodes`, killed if it is still running after 30 s.
fn dlock_over(nodes: &[String], args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", nodes.join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run dlock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("dlock {args:?} still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("dlock's output")
}

#[test]
fn one_server_under_two_names_exits_2_every_time_and_nothing_is_held() {
    let servers = nodes(2);
    let (a, x) = (&servers[0], &servers[1]);
    let by_ip = format!("redis://127.0.0.1:{}", a.port());
    let by_name = format!("redis://localhost:{}", a.port());
    let list = [by_ip.clone(), by_name.clone(), x.url()];
    let ran = tempfile::tempdir().expect("temp dir");
    let marker = ran.path().join("ran");
    let marker_arg = marker.to_string_lossy().to_string();
    let said = format!("nodes {by_ip} and {by_name} are the same server (run_id ");
    for args in [
        &["acquire", "r", "--ttl", "10s"][..],
        &["acquire", "r", "--ttl", "10s", "--wait", "2s"],
        &["run", "r", "--ttl", "10s", "--", "touch", &marker_arg],
    ] {
        // Each a new process: its first and only lock call meets the duplicate.
        for _ in 0..3 {
            let out = dlock_over(&list, args);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&said), "{args:?}: {stderr}");
            assert!(stderr.contains("list each server once"), "{stderr}");
        }
    }
    assert!(!marker.exists(), "the command never ran");
    assert_eq!(token_on(a, "r"), None, "nothing left held on A");
    assert_eq!(token_on(x, "r"), None, "nothing left held on X");
    // The same URL twice is refused before anything is asked.
    let out = dlock_over(&[x.url(), x.url()], &["acquire", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // Two distinct servers and A once: a quorum as before.
    let out = dlock_over(&[by_name, x.url()], &["acquire", "r", "--ttl", "10s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
