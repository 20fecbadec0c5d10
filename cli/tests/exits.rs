//! Exit codes a script relies on: `status` without a majority of answers, and durations outside
//! what the nodes take, empty names and TTLs too short for any validity refused as a bad command
//! line before any node is asked.

mod common;
use common::*;

use std::process::Command;

/// `dlock ARGS` against a node URL nothing listens on: a node asked would be refused (exit 4),
/// so exit 2 proves that none was.
fn against_a_dead_port(args: &[&str]) -> std::process::Output {
    let dead = dead_url();
    Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", &dead)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run dlock")
}

/// A URL of a port that was free a moment ago.
fn dead_url() -> String {
    format!("redis://127.0.0.1:{}", dlock_testkit::free_port())
}

#[test]
fn durations_outside_what_the_nodes_take_exit_2_before_any_node_is_asked() {
    for args in [
        &["acquire", "job", "--ttl", "100d"][..],
        &["acquire", "job", "--ttl", "0s"],
        &["acquire", "job", "--ttl", "10"],
        &["run", "job", "--ttl", "25h", "--", "true"],
        &["extend", "job", "owner", "--ttl", "100d"],
        &["--timeout", "0s", "acquire", "job"],
        &["--ack-timeout", "0s", "acquire", "job"],
        &["run", "job", "--max-hold", "0s", "--", "true"],
    ] {
        let out = against_a_dead_port(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("refused"),
            "{args:?} asked a node: {stderr}"
        );
    }
    let out = against_a_dead_port(&["acquire", "job", "--ttl", "100d"]);
    assert!(
        text(&out.stderr).contains("1ms to 24h"),
        "{}",
        text(&out.stderr)
    );
    // The largest TTL the nodes take is taken: the dead node is asked (4).
    let out = against_a_dead_port(&["acquire", "job", "--ttl", "24h"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
}

/// Issue 48, findings 7 and 10: each of these used to be sent (exit 0, or retried for the whole
/// wait, or for ever); now each is refused in one line, exit 2, with no node asked.
#[test]
fn bad_input_exits_2_in_one_line_before_any_node_is_asked() {
    let dead = dead_url();
    let twice = format!("{dead},{dead}");
    let long_owner = "o".repeat(257);
    for args in [
        &["run", "", "--", "true"][..],
        &["acquire", ""],
        &["status", ""],
        &["release", "", "owner"],
        &["extend", "", "owner", "--ttl", "10s"],
        // Issue 48, finding F8: an owner no node takes (the module's 1 to 256 bytes).
        &["release", "job", ""],
        &["extend", "job", "", "--ttl", "1s"],
        &["release", "job", &long_owner],
        &["run", "job", "--ttl", "1ms", "--", "true"],
        &["run", "job", "--ttl", "2ms", "--wait", "5s", "--", "true"],
        &["acquire", "job", "--ttl", "2ms"],
        &["elect", "leader", "--ttl", "2ms", "--once", "--", "true"],
        &["run", "job", "--wait", "100000h", "--", "true"],
        &["--nodes", &twice, "acquire", "job"],
    ] {
        let out = against_a_dead_port(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("dlock: "), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("refused"),
            "{args:?} asked a node: {stderr}"
        );
    }
    let said = |args: &[&str]| text(&against_a_dead_port(args).stderr);
    assert!(said(&["status", ""]).contains("the resource name must not be empty"));
    assert!(said(&["release", "job", ""]).contains("owner must be 1 to 256 bytes, got 0 bytes"));
    assert!(said(&["extend", "job", "", "--ttl", "1s"]).contains("owner must be 1 to 256 bytes"));
    assert!(said(&["acquire", "job", "--ttl", "2ms"]).contains("ttl must be at least 3 ms"));
    assert!(said(&["acquire", "job", "--wait", "100000h"]).contains("at most 315360000000 ms"));
}

#[test]
fn status_exits_4_when_fewer_than_a_majority_answered() {
    let mut servers = nodes(3);
    let all = dlock(&servers, &["status", "job"]);
    assert_eq!(all.status.code(), Some(0), "{}", text(&all.stderr));
    servers[2].kill();
    let two = dlock(&servers, &["status", "job"]);
    assert_eq!(
        two.status.code(),
        Some(0),
        "a majority answered: {}",
        text(&two.stderr)
    );
    servers[1].kill();
    let one = dlock(&servers, &["status", "job"]);
    assert_eq!(one.status.code(), Some(4), "{}", text(&one.stderr));
    let stdout = text(&one.stdout);
    assert_eq!(
        stdout.lines().count(),
        3,
        "every node still has its line: {stdout}"
    );
    assert!(
        text(&one.stderr).contains("1 of 3 nodes answered"),
        "{}",
        text(&one.stderr)
    );
    let none = against_a_dead_port(&["status", "job"]);
    assert_eq!(none.status.code(), Some(4));
    assert!(
        text(&none.stderr).contains("0 of 1 node answered"),
        "{}",
        text(&none.stderr)
    );
}

#[test]
fn a_wrong_password_says_how_the_cli_takes_one() {
    let servers = nodes(1);
    redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "right"])
        .query::<()>(&mut servers[0].conn())
        .expect("set a password");
    let out = Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", urls(&servers).join(","))
        .env("DLOCK_TIMEOUT", PATIENT)
        .env("DLOCK_PASSWORD", "not-the-pa55word")
        .args(["acquire", "job"])
        .output()
        .expect("run dlock");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("authentication failed"), "{stderr}");
    assert!(stderr.contains("--user and DLOCK_PASSWORD"), "{stderr}");
    assert!(
        !stderr.contains("pa55word"),
        "the password is never shown: {stderr}"
    );
    assert!(stderr.contains("1 node needed"), "{stderr}");
}
