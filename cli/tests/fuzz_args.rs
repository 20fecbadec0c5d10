//! A seeded fuzz of bad command lines against the real `dlock` binary (issue 48): durations,
//! node URLs, resource names, repeated nodes, unknown flags and option values, each case one
//! bad element among valid ones. Every case must exit 2 with one line on stderr (`dlock: ...`,
//! no password in it) and no network traffic: every node URL points at a TCP listener this test
//! owns, which must never see a connection. Deterministic (a fixed seed; a failure names the
//! case), a few hundred cases in a few seconds.

mod common;
use common::text;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

const SEED: u64 = 48;
const CASES: usize = 400;
/// Far more than a refusal takes; a case over it was waiting on something.
const EACH_WITHIN: Duration = Duration::from_secs(5);
/// The password of the URLs that carry one: never to be seen in a message.
const SECRET: &str = "s3cret-pa55";

/// Durations no flag takes: no unit, not a number, negative, beyond ten years, overflowing.
const BAD_DURATIONS: &[&str] = &[
    "0",
    "5",
    "1.5",
    "",
    " ",
    "s",
    "ms",
    "10 ",
    "1e3s",
    "5 parsecs",
    "10q",
    "0x10s",
    "1ms2",
    "5s5",
    "NaN",
    "inf",
    "+5s",
    "-1",
    "-1s",
    "100000h",
    "87601h",
    "315360000001ms",
    "3651d",
    "18446744073709551616ms",
    "18446744073709551615s",
    "99999999999999999999h",
    "١s",
];

/// Flags taking a duration, the command line they go in, and values bad for that flag alone.
fn duration_flags() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    vec![
        (
            "--ttl",
            vec!["run", "job"],
            vec!["0s", "0ms", "1ms", "2ms", "25h", "100d", "500us"],
        ),
        ("--ttl", vec!["acquire", "job"], vec!["0s", "2ms", "25h"]),
        (
            "--ttl",
            vec!["extend", "job", "owner"],
            vec!["0s", "1ms", "25h"],
        ),
        ("--ttl", vec!["elect", "leader"], vec!["0s", "2ms", "25h"]),
        ("--wait", vec!["run", "job"], vec![]),
        ("--wait", vec!["acquire", "job"], vec![]),
        ("--max-hold", vec!["run", "job"], vec!["0s", "0ms"]),
        ("--timeout", vec!["status", "job"], vec!["0s", "0ns"]),
        ("--ack-timeout", vec!["acquire", "job"], vec!["0s"]),
        ("--interval", vec!["top"], vec!["50ms", "99ms", "0s"]),
    ]
}

/// A command line with one bad duration.
fn bad_duration(rng: &mut StdRng) -> Vec<String> {
    let flags = duration_flags();
    let (flag, base, own) = flags.choose(rng).expect("flags");
    let value = match rng.random_range(0..4) {
        0 if !own.is_empty() => own.choose(rng).expect("own").to_string(),
        1 => format!("{}h", rng.random_range(87_601u64..u64::MAX / 3_600)),
        2 => format!(
            "{}{}",
            rng.random_range(0..1_000_000u64),
            ["", "x", "sec5", "m s"][rng.random_range(0..4)]
        ),
        _ => BAD_DURATIONS.choose(rng).expect("durations").to_string(),
    };
    let mut line = strings(base);
    if flag.starts_with("--timeout") || flag.starts_with("--ack") {
        line.splice(0..0, [flag.to_string(), value]);
    } else {
        line.extend([flag.to_string(), value]);
    }
    line
}

/// Node URLs no node can be (`{P}`: the listener's port).
const BAD_URLS: &[&str] = &[
    "http://127.0.0.1:{P}",
    "ftp://127.0.0.1:{P}",
    "redis-x://127.0.0.1:{P}",
    "127.0.0.1:{P}",
    "redis://",
    "rediss://",
    "redis://:0",
    "redis://:{P}",
    "redis://127.0.0.1:0",
    "redis://127.0.0.1:99999",
    "redis://127.0.0.1:-1",
    "redis://127.0.0.1:abc",
    "redis://[::1",
    "redis://127.0.0.1:{P}?foo=bar",
    "redis://127.0.0.1:{P}?db=x",
    "redis://127.0.0.1:{P}/abc",
    "redis://127.0.0.1:{P}/99999999999",
    "redis://127.0.0.1:{P}/-1",
    "unix://",
    "redis:///",
    "redis+sentinel://127.0.0.1:{P}",
    "redis+sentinel://:1/m",
    "redis+sentinel://127.0.0.1:0/m",
    "redis+cluster://127.0.0.1:{P}/3",
    "redis+cluster://",
    "redis+cluster://127.0.0.1:0",
    "http://app:s3cret-pa55@127.0.0.1:{P}",
    "redis://app:s3cret-pa55@127.0.0.1:{P}?x=1",
    ",",
    " ",
];

/// A command line whose --nodes (or DLOCK_NODES) has a bad URL, a huge one, or a node twice.
fn bad_nodes(rng: &mut StdRng, port: u16) -> (Vec<String>, Option<String>) {
    let good = format!("redis://127.0.0.1:{port}");
    let with_password = format!("redis://app:{SECRET}@127.0.0.1:{port}");
    let nodes = match rng.random_range(0..5) {
        0 => format!("{good},{good}"),
        1 => format!(
            "{with_password},{}",
            with_password.replace("redis://", "REDIS://")
        ),
        2 => format!("redis://{}:{port}", huge_host(rng)),
        _ => {
            let bad = BAD_URLS
                .choose(rng)
                .expect("urls")
                .replace("{P}", &port.to_string());
            // An empty piece of a list is skipped: alone it is no node, beside one it is nothing.
            if bad.trim() == "," || bad.trim().is_empty() {
                return (strings(COMMANDS.choose(rng).expect("commands")), Some(bad));
            }
            match rng.random_range(0..3) {
                0 => bad,
                1 => format!("{good},{bad}"),
                _ => format!("{bad},{good}"),
            }
        }
    };
    let line = strings(COMMANDS.choose(rng).expect("commands"));
    if rng.random_bool(0.5) {
        return (line, Some(nodes));
    }
    ([vec!["--nodes".to_string(), nodes], line].concat(), None)
}

/// A host no DNS name can be: over 253 bytes, or a label over 63.
fn huge_host(rng: &mut StdRng) -> String {
    match rng.random_range(0..2) {
        0 => "a".repeat(rng.random_range(64..60_000)),
        _ => "ab.".repeat(rng.random_range(85..20_000)),
    }
}

/// Commands that would ask the nodes, given good arguments.
const COMMANDS: &[&[&str]] = &[
    &["run", "job", "--", "true"],
    &["acquire", "job"],
    &["acquire", "job", "--wait", "1s"],
    &["status", "job"],
    &["release", "job", "owner"],
    &["extend", "job", "owner", "--ttl", "10s"],
    &["elect", "leader", "--once", "--", "true"],
    &["leader", "leader"],
    &["observe", "leader", "--count", "1"],
    &["top", "--once"],
];

/// Each command with an empty resource (or election) name.
const EMPTY_NAMES: &[&[&str]] = &[
    &["run", "", "--", "true"],
    &["acquire", ""],
    &["acquire", "", "--wait", "1s", "--limit", "3"],
    &["status", ""],
    &["release", "", "owner"],
    &["extend", "", "owner", "--ttl", "10s"],
    &["elect", "", "--", "true"],
    &["leader", ""],
    &["observe", ""],
];

/// Lines wrong in their shape or an option's value.
const BAD_SHAPES: &[&[&str]] = &[
    &["frobnicate"],
    &["--bogus", "status", "job"],
    &["status", "job", "--bogus"],
    &["status", "job", "-z"],
    &["run", "job"],
    &["run", "--", "true"],
    &["acquire"],
    &["acquire", "job", "--ttl"],
    &["release", "job"],
    &["extend", "job", "owner"],
    &["elect", "leader"],
    &["acquire", "job", "--limit", "0"],
    &["acquire", "job", "--limit", "10001"],
    &["acquire", "job", "--limit", "-1"],
    &["acquire", "job", "--limit", "two"],
    &["acquire", "job", "--shared", "--limit", "2"],
    &["run", "job", "--limit", "99999999999", "--", "true"],
    &["top", "--rows", "0"],
    &["top", "--rows", "1001"],
    &["observe", "leader", "--count", "-1"],
    &["observe", "leader", "--count", "x"],
    &["--replica-ack", "-1", "acquire", "job"],
    &["--replica-ack", "some", "acquire", "job"],
    &["--replica-ack", "99999999999", "acquire", "job"],
    &["--wait-mode", "poll", "acquire", "job"],
    &["status", "job", "extra"],
    &["acquire", "job", "job2"],
];

fn bad_shape(rng: &mut StdRng) -> Vec<String> {
    let mut line = strings(BAD_SHAPES.choose(rng).expect("shapes"));
    if rng.random_bool(0.3) {
        // A value over the 200 bytes a leader's value may have.
        let value = "v".repeat(rng.random_range(201..5_000));
        line = strings(&["elect", "leader", "--value", &value, "--", "true"]);
    }
    line
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// One case: the command line, and DLOCK_NODES when it carries the bad element.
fn case(rng: &mut StdRng, port: u16) -> (Vec<String>, Option<String>) {
    let (mut line, nodes) = match rng.random_range(0..4) {
        0 => (bad_duration(rng), None),
        1 => bad_nodes(rng, port),
        2 => (strings(EMPTY_NAMES.choose(rng).expect("names")), None),
        _ => (bad_shape(rng), None),
    };
    if rng.random_bool(0.3) {
        let good: &[&[&str]] = &[
            &["--timeout", "50ms"],
            &["--no-fencing"],
            &["--wait-mode", "retry"],
        ];
        line.splice(0..0, strings(good.choose(rng).expect("good")));
    }
    (line, nodes)
}

/// A listener that accepts nothing by itself: any connection made to it waits in its backlog.
fn listener() -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.set_nonblocking(true).expect("non-blocking");
    listener
}

/// Connections made to `listener` since the last look.
fn connections(listener: &TcpListener) -> usize {
    let mut made = 0;
    loop {
        match listener.accept() {
            Ok(_) => made += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return made,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Runs dlock with `line`, killed if it runs past EACH_WITHIN.
fn run(line: &[String], nodes: &str) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env("DLOCK_NODES", nodes)
        .env_remove("DLOCK_PASSWORD")
        .env_remove("DLOCK_TIMEOUT")
        .args(line)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dlock");
    while child.try_wait().expect("wait").is_none() && started.elapsed() < EACH_WITHIN {
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("dlock's output");
    (out.status.code(), text(&out.stderr), started.elapsed())
}

/// What a failure shows of a line: long arguments cut.
fn shown(line: &[String], nodes: &Option<String>) -> String {
    let cut = |s: &String| {
        if s.len() > 80 {
            format!(
                "{}...({} bytes)",
                &s[..s.char_indices().nth(60).map_or(s.len(), |(i, _)| i)],
                s.len()
            )
        } else {
            format!("{s:?}")
        }
    };
    let nodes = nodes
        .as_ref()
        .map(|n| format!("DLOCK_NODES={} ", cut(n)))
        .unwrap_or_default();
    format!(
        "{nodes}dlock {}",
        line.iter().map(cut).collect::<Vec<_>>().join(" ")
    )
}

#[test]
fn bad_command_lines_exit_2_in_one_line_without_any_network_traffic() {
    let listener = listener();
    let port = listener.local_addr().expect("address").port();
    let good = format!("redis://127.0.0.1:{port}");
    let mut rng = StdRng::seed_from_u64(SEED);
    let started = Instant::now();
    let mut failures = Vec::new();
    for i in 0..CASES {
        let (line, nodes) = case(&mut rng, port);
        let (code, stderr, took) = run(&line, nodes.as_deref().unwrap_or(&good));
        let connected = connections(&listener);
        let wrong = [
            (code != Some(2)).then(|| format!("exit {code:?}")),
            (stderr.lines().count() != 1).then(|| format!("{} lines", stderr.lines().count())),
            (!stderr.starts_with("dlock: ")).then(|| "not a dlock: line".to_string()),
            stderr
                .contains(SECRET)
                .then(|| "the password shows".to_string()),
            (connected > 0).then(|| format!("{connected} connections to the node")),
            (took >= EACH_WITHIN).then(|| format!("still running after {took:?}")),
        ];
        let wrong: Vec<String> = wrong.into_iter().flatten().collect();
        if !wrong.is_empty() {
            let said: String = stderr.chars().take(300).collect();
            failures.push(format!(
                "case {i}: {}: {}\n    {said}",
                wrong.join(", "),
                shown(&line, &nodes)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CASES} cases (seed {SEED}):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The listener works: a connection to it is seen (so none above went unnoticed).
    drop(std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(connections(&listener), 1, "the listener sees connections");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
