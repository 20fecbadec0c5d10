//! `dlock run|acquire --shared | --limit N` against real nodes: `dlock run --limit N` is `sem`
//! for a fleet (never more than N commands at once), a SIGKILLed holder's permit comes back when
//! its lease ends, a kind mismatch exits 7, and status lists every holder.

mod common;
use common::*;

use std::process::Child;
use std::time::{Duration, Instant};

/// A job that records how many jobs were inside at once: each appends +1 / -1 lines around a
/// pause to a shared log, and the most concurrent is the largest running sum.
fn most_inside(log: &std::path::Path) -> i32 {
    let lines = std::fs::read_to_string(log).unwrap_or_default();
    let mut inside = 0;
    let mut most = 0;
    for step in lines.lines() {
        inside += step.trim().parse::<i32>().expect("a +1 or -1 line");
        most = most.max(inside);
    }
    assert_eq!(inside, 0, "every job left: {lines}");
    most
}

#[test]
fn run_with_a_limit_is_sem_for_a_fleet_on_1_and_5_nodes() {
    for n in [1, 5] {
        let servers = nodes(n);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("inside.log");
        let job = format!("echo 1 >> {0}; sleep 0.3; echo -1 >> {0}", log.display());
        let started = Instant::now();
        let jobs: Vec<Child> = (0..6)
            .map(|_| {
                spawn(
                    &servers,
                    &[
                        "run", "--limit", "2", "--wait", "20s", "batch", "--", "sh", "-c", &job,
                    ],
                )
            })
            .collect();
        for mut job in jobs {
            assert!(job.wait().unwrap().success(), "N={n}: a job failed");
        }
        assert_eq!(most_inside(&log), 2, "N={n}: two at a time, never three");
        assert!(
            started.elapsed() >= Duration::from_millis(900),
            "N={n}: three waves of two"
        );
    }
}

#[test]
fn a_sigkilled_holders_permit_comes_back_when_its_lease_ends_on_1_and_5_nodes() {
    for n in [1, 5] {
        let servers = nodes(n);
        let args = [
            "run", "--limit", "2", "--ttl", "1s", "pool", "--", "sleep", "10",
        ];
        let mut holders = [spawn(&servers, &args), spawn(&servers, &args)];
        // A permit of limit 2 on 5 nodes is held on 4 of them (on 1 node, on it).
        let quorum = if n == 1 { 1 } else { 4 };
        let both_held = || {
            servers
                .iter()
                .filter(|s| holders_on(s, "pool") == 2)
                .count()
                >= quorum
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !both_held() {
            assert!(
                Instant::now() < deadline,
                "N={n}: the holders never got their permits"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let full = dlock(&servers, &["acquire", "--limit", "2", "pool"]);
        assert_eq!(full.status.code(), Some(3), "N={n}: both permits are taken");
        for holder in &mut holders {
            holder.kill().expect("SIGKILL dlock"); // its watchdog dies with it
            let _ = holder.wait();
        }
        let started = Instant::now();
        let out = dlock(
            &servers,
            &["acquire", "--limit", "2", "--wait", "10s", "pool"],
        );
        assert_eq!(out.status.code(), Some(0), "N={n}: {}", text(&out.stderr));
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_millis(2_500),
            "N={n}: at the 1 s lease's end: {waited:?}"
        );
    }
}

/// How many hold `resource` on `server` (from `DLOCK.STATUS`; 0 when free).
fn holders_on(server: &Server, resource: &str) -> usize {
    let reply: Option<Vec<redis::Value>> = redis::cmd("DLOCK.STATUS")
        .arg(resource)
        .query(&mut server.conn())
        .expect("DLOCK.STATUS");
    let Some(fields) = reply else {
        return 0;
    };
    let at = fields
        .iter()
        .position(|f| f == &redis::Value::SimpleString("holders".into()));
    let at = at.or_else(|| {
        fields
            .iter()
            .position(|f| matches!(f, redis::Value::BulkString(b) if b == b"holders"))
    });
    match at.map(|i| &fields[i + 1]) {
        Some(redis::Value::Array(list)) => list.len(),
        _ => 1, // a plain lock: one holder
    }
}

#[test]
fn kinds_that_do_not_match_exit_7_and_bad_flags_exit_2() {
    let servers = nodes(3);
    let first = dlock(&servers, &["acquire", "--limit", "3", "pool"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    for args in [
        &["acquire", "--limit", "2", "pool"][..],
        &["acquire", "--shared", "pool"],
        &["acquire", "pool"],
    ] {
        let out = dlock(&servers, args);
        assert_eq!(
            out.status.code(),
            Some(7),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let stderr = text(&out.stderr);
        assert!(stderr.contains("semaphore with LIMIT 3"), "{stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "one line, no backtrace: {stderr}"
        );
    }
    for args in [
        &["acquire", "--shared", "--limit", "2", "x"][..],
        &["acquire", "--limit", "0", "x"],
    ] {
        assert_eq!(dlock(&servers, args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn readers_share_and_status_lists_every_holder() {
    let servers = nodes(3);
    let mut owners = Vec::new();
    for _ in 0..2 {
        let out = dlock(&servers, &["acquire", "--shared", "--ttl", "30s", "doc"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        owners.push(text(&out.stdout).split(' ').next().unwrap().to_string());
    }
    let writer = dlock(&servers, &["acquire", "doc"]);
    assert_eq!(
        writer.status.code(),
        Some(3),
        "a writer waits for the readers"
    );
    let status = text(&dlock(&servers, &["status", "doc"]).stdout);
    for owner in &owners {
        assert_eq!(
            status.matches(owner.as_str()).count(),
            3,
            "on every node: {status}"
        );
    }
    assert_eq!(status.matches("mode=shared").count(), 6, "{status}");
    for owner in &owners {
        let out = dlock(&servers, &["release", "doc", owner]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert_eq!(dlock(&servers, &["acquire", "doc"]).status.code(), Some(0));
}
