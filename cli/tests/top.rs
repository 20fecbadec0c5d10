//! `dlock top` without a terminal (the table once, or JSON) and the waiting line's silence when
//! stderr is not a terminal. The live view and the line on a terminal are checked in tmux by
//! monitoring/tests/test_terminal.py.

mod common;
use common::*;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn dlock(nodes: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dlock"));
    cmd.env("DLOCK_NODES", nodes)
        .env("DLOCK_TIMEOUT", PATIENT)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn output(nodes: &str, args: &[&str]) -> Output {
    dlock(nodes, args).output().expect("run dlock")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// `dlock acquire RESOURCE --wait 20s` in the background, stderr captured, once it is queued.
fn queued(servers: &[Server], resource: &str) -> Child {
    let child = dlock(
        &urls(servers).join(","),
        &["acquire", resource, "--wait", "20s"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(5);
    while servers.iter().any(|s| waiters(s, resource) == 0) {
        assert!(Instant::now() < deadline, "not queued within 5 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn top_once_lists_waiting_and_held_locks_merged_over_the_nodes() {
    let servers = nodes(3);
    let list = urls(&servers).join(",");
    let held = output(&list, &["acquire", "orders", "--ttl", "30s"]);
    assert_eq!(held.status.code(), Some(0), "{}", text(&held.stderr));
    let owner = text(&held.stdout)
        .split(' ')
        .next()
        .expect("owner")
        .to_string();
    output(&list, &["acquire", "idle", "--ttl", "30s"]);
    let waiter = queued(&servers, "orders");
    // Not a terminal: --once is implied.
    let out = output(&list, &["top"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.starts_with("dlock top: 3 of 3 nodes answered"),
        "{table}"
    );
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("orders") || l.starts_with("idle"))
        .collect();
    assert_eq!(
        rows.len(),
        3,
        "orders waiting, orders and idle held:\n{table}"
    );
    assert!(
        rows[0].contains(&owner) && rows[0].ends_with(" 3"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].starts_with("orders"),
        "most waiters first:\n{table}"
    );

    let json = output(&list, &["top", "--json", "--rows", "1"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3);
    for node in nodes {
        assert_eq!(node["complete"], true);
        assert_eq!(node["held_total"], 2);
        assert_eq!(node["held"].as_array().map(Vec::len), Some(1), "--rows 1");
        assert_eq!(node["waiting"][0]["resource"], "orders");
        assert_eq!(node["waiting"][0]["holder"]["owner"], owner.as_str());
    }
    output(&list, &["release", "orders", &owner]);
    let waited = waiter.wait_with_output().expect("waiter");
    assert_eq!(waited.status.code(), Some(0));
    assert_eq!(
        text(&waited.stderr),
        "",
        "no waiting line without a terminal"
    );
}

#[test]
fn bad_flags_are_usage_errors_and_unreachable_nodes_are_named() {
    let server = Server::start();
    for args in [
        &["top", "--rows", "0"][..],
        &["top", "--rows", "x"],
        &["top", "--interval", "10ms"],
        &["top", "--interval", "soon"],
    ] {
        let out = output(&server.url(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!text(&out.stderr).contains("panicked"), "{args:?}");
    }
    let dead = format!("redis://127.0.0.1:{}", dlock_testkit::free_port());
    let out = output(&dead, &["top", "--once"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "nothing to show: no node answered"
    );
    assert!(text(&out.stdout).contains(&dead), "{}", text(&out.stdout));
    let json = output(&format!("{},{dead}", server.url()), &["top", "--json"]);
    assert_eq!(json.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert!(doc["nodes"][1]["error"].is_string(), "{doc}");
}
