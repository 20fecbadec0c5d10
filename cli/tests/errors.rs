//! conformance/errors.json through the `dlock` binary: the exit code of each failure's class and
//! the words of its one line on stderr (the same table every client runs).

mod common;
use common::text;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dlock_testkit::{error_cases, ErrorCase, Setup};

fn dlock(setup: &Setup, case: &ErrorCase, args: &[&str], password: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dlock"));
    command
        .env("DLOCK_NODES", setup.urls.join(","))
        .env("DLOCK_TIMEOUT", format!("{}ms", case.timeout.as_millis()))
        .env_remove("DLOCK_PASSWORD")
        .args(args)
        .stdin(Stdio::null());
    if let Some(password) = password {
        command.env("DLOCK_PASSWORD", password);
    }
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dlock");
    within(child, Duration::from_secs(30), &case.situation)
}

/// `child`'s output once it exits; killed, and the test failed, if it runs longer than `limit`.
fn within(mut child: Child, limit: Duration, situation: &str) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("poll dlock").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{situation}: dlock still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("dlock's output")
}

fn kind_args(kind: Option<u32>) -> Vec<String> {
    kind.map(|k| vec!["--limit".to_string(), k.to_string()])
        .unwrap_or_default()
}

fn exit_code(class: &str) -> i32 {
    match class {
        "no_quorum" => 4,
        "invalid_argument" => 2,
        "contended" => 3,
        "wrong_kind" => 7,
        other => panic!("no exit code for {other:?}"),
    }
}

#[test]
fn the_cli_says_what_every_client_says_about_each_failure() {
    for case in error_cases() {
        let Some(setup) = case.start() else {
            eprintln!("{}: skipped, this redis-server has no TLS", case.situation);
            continue;
        };
        if let Some(kind) = case.held {
            let mut args = vec!["acquire", &case.resource, "--ttl", "30s"];
            let extra = kind_args(kind);
            args.extend(extra.iter().map(String::as_str));
            let held = dlock(&setup, &case, &args, None);
            assert_eq!(held.status.code(), Some(0), "{}", text(&held.stderr));
        }
        let wait = format!("{}ms", case.wait.unwrap_or_default().as_millis());
        let ttl = format!("{}ms", case.ttl.as_millis());
        let mut args = vec!["acquire", &case.resource, "--ttl", &ttl, "--wait", &wait];
        let extra = kind_args(case.ask);
        args.extend(extra.iter().map(String::as_str));
        let started = std::time::Instant::now();
        let out = dlock(&setup, &case, &args, case.password.as_deref());
        let took = started.elapsed();
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(exit_code(&case.error)),
            "{}: {stderr}",
            case.situation
        );
        assert_eq!(stderr.lines().count(), 1, "{}: {stderr}", case.situation);
        case.check(&setup, &stderr);
        case.check_duration(took);
    }
}
