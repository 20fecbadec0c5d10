//! `dlock run a b c -- CMD` (docs/multi.md): several resources taken all or nothing as one set,
//! the set's token in `DLOCK_TOKEN` and once per resource in `DLOCK_TOKENS`; sets asked in
//! opposite orders never run together nor wait for each other for ever.

mod common;
use common::*;

use std::process::Child;

#[test]
fn run_takes_a_set_and_exports_its_tokens() {
    let servers = nodes(3);
    let shown = "echo $DLOCK_TOKEN; echo $DLOCK_TOKENS; echo $DLOCK_RESOURCE";
    let out = dlock(&servers, &["run", "a", "b", "c", "--", "sh", "-c", shown]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    let token = lines[0];
    assert!(token.parse::<u64>().is_ok(), "{printed}");
    assert_eq!(lines[1], [token; 3].join(" "), "one token per resource");
    assert_eq!(lines[2], "a+b+c");
    for key in ["a", "b", "c"] {
        assert!(
            servers.iter().all(|s| token_on(s, key).is_none()),
            "{key} released"
        );
    }
}

#[test]
fn a_set_with_a_member_held_is_not_taken_and_holds_nothing() {
    let servers = nodes(3);
    let holder = dlock(&servers, &["acquire", "b", "--ttl", "30s"]);
    assert!(holder.status.success(), "{}", text(&holder.stderr));
    let out = dlock(&servers, &["run", "--wait", "0s", "a", "b", "--", "true"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        servers.iter().all(|s| token_on(s, "a").is_none()),
        "a never held"
    );
    for bad in [
        &["run", "a", "a", "--", "true"][..],
        &["run", "--limit", "2", "a", "b", "--", "true"],
    ] {
        let out = dlock(&servers, bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out.stderr));
    }
}

#[test]
fn sets_in_opposite_orders_never_overlap_and_all_finish() {
    let servers = nodes(3);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("inside.log");
    let job = format!("echo 1 >> {0}; sleep 0.1; echo -1 >> {0}", log.display());
    let jobs: Vec<Child> = (0..6)
        .map(|i| {
            let keys: [&str; 2] = if i % 2 == 0 { ["p", "q"] } else { ["q", "p"] };
            let args = [
                &["run"][..],
                &keys[..],
                &["--wait", "60s", "--", "sh", "-c", &job],
            ]
            .concat();
            spawn(&servers, &args)
        })
        .collect();
    for mut child in jobs {
        assert!(child.wait().expect("dlock ran").success());
    }
    let lines = std::fs::read_to_string(&log).expect("the log");
    let mut inside = 0;
    for step in lines.lines() {
        inside += step.trim().parse::<i32>().expect("+1 or -1");
        assert!(inside <= 1, "two sets of p and q at once: {lines}");
    }
    assert_eq!(lines.lines().count(), 12, "every job ran: {lines}");
}
