//! Every DLOCK.* reply from the contract, against a real redis-server with the module.

use crate::common::*;

#[test]
fn acquire_grants_a_token_and_refuses_another_owner() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 10_000).expect("granted");
    assert!(token >= 1);
    assert_eq!(
        acquire(&mut c, "res", "bob", 10_000),
        None,
        "nil for another owner"
    );
    assert_eq!(info_field(&mut c, "contended"), 1);
    assert_eq!(info_field(&mut c, "grants"), 1);
}

#[test]
fn acquire_by_the_same_owner_is_idempotent_and_resets_the_ttl() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 1_000).unwrap();
    assert!(pttl(&mut c, "res") <= 1_000);
    assert_eq!(
        acquire(&mut c, "res", "alice", 60_000),
        Some(token),
        "same token"
    );
    assert!(pttl(&mut c, "res") > 50_000, "ttl reset to the new value");
    assert_eq!(
        status(&mut c, "res").unwrap().3,
        1,
        "no extra hold without REENTRANT"
    );
    assert_eq!(info_field(&mut c, "grants"), 1, "a renewal is not a grant");
}

#[test]
fn reentrant_holds_count_up_and_release_counts_down() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire_reentrant(&mut c, "res", "alice", 10_000).unwrap();
    for holds in 2..=3 {
        let again = acquire_reentrant(&mut c, "res", "alice", 10_000);
        assert_eq!(again, Some(token), "hold {holds}: the same token");
        assert_eq!(status(&mut c, "res").unwrap().3, holds);
    }
    assert_eq!(acquire_reentrant(&mut c, "res", "bob", 10_000), None);
    // (reply, holds left): removed at zero holds, and a release then finds nothing.
    for (reply, holds_left) in [(1, Some(2)), (1, Some(1)), (1, None), (0, None)] {
        assert_eq!(
            release(&mut c, "res", "alice"),
            reply,
            "release to {holds_left:?} holds"
        );
        let holds = status(&mut c, "res").map(|(_, _, _, holds)| holds);
        assert_eq!(holds, holds_left, "holds left after a release");
    }
}

/// Another owner's commands on a held lock, and the holder's on a free key: each answers nil or 0
/// and changes neither the lock, its TTL, the counter nor the free key.
#[test]
fn commands_of_anyone_but_the_holder_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    let higher = (token + 1_000_000).to_string();
    let lock =
        |c: &mut Connection| status(c, "res").map(|(owner, token, _, holds)| (owner, token, holds));
    let (lock_before, counter_before) = (lock(&mut c), counter(&mut c));
    // (who asks what, the command, its reply: None for nil)
    #[rustfmt::skip]
    let cases: [(&str, &[&str], Option<i64>); 8] = [
        ("ACQUIRE by another owner", &["DLOCK.ACQUIRE", "res", "bob", "10000"], None),
        ("ACQUIRE REENTRANT by another owner",
            &["DLOCK.ACQUIRE", "res", "bob", "10000", "REENTRANT"], None),
        ("RELEASE by another owner", &["DLOCK.RELEASE", "res", "bob"], Some(0)),
        ("RELEASE of a free key", &["DLOCK.RELEASE", "free", "alice"], Some(0)),
        ("EXTEND by another owner", &["DLOCK.EXTEND", "res", "bob", "60000"], Some(0)),
        ("EXTEND of a free key", &["DLOCK.EXTEND", "free", "alice", "60000"], Some(0)),
        ("FENCE by another owner", &["DLOCK.FENCE", "res", "bob", &higher], Some(0)),
        ("FENCE of a free key", &["DLOCK.FENCE", "free", "alice", &higher], Some(0)),
    ];
    for (name, args, expected) in cases {
        let reply: Option<i64> = redis::cmd(args[0])
            .arg(&args[1..])
            .query(&mut c)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(reply, expected, "{name}: the reply");
        assert_eq!(lock(&mut c), lock_before, "{name}: the lock changed");
        assert!(pttl(&mut c, "res") <= 10_000, "{name}: the TTL was reset");
        assert_eq!(counter(&mut c), counter_before, "{name}: the counter moved");
        assert_eq!(pttl(&mut c, "free"), -2, "{name}: the free key was created");
    }
}

#[test]
fn release_by_the_owner_removes_the_key() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "alice", 10_000).unwrap();
    assert_eq!(release(&mut c, "res", "alice"), 1);
    let exists: i64 = redis::cmd("EXISTS").arg("res").query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn extend_resets_the_owners_ttl_and_never_resurrects() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "alice", 1_000).unwrap();
    assert!(pttl(&mut c, "res") <= 1_000);
    assert_eq!(extend(&mut c, "res", "alice", 60_000), 1);
    assert!(pttl(&mut c, "res") > 50_000);

    acquire(&mut c, "short", "alice", 30).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(80));
    assert_eq!(
        extend(&mut c, "short", "alice", 60_000),
        0,
        "expired stays expired"
    );
    assert_eq!(status(&mut c, "short"), None);
}

#[test]
fn fence_raises_the_counter_and_sets_the_holders_token() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    let higher = token + 1_000_000;
    assert!(
        counter(&mut c) < higher,
        "the fence has the counter to raise"
    );
    assert_eq!(fence(&mut c, "res", "alice", higher), 1);
    assert_eq!(status(&mut c, "res").unwrap().1, higher);
    assert_eq!(counter(&mut c), higher);
    assert_eq!(
        acquire(&mut c, "res", "alice", 10_000),
        Some(higher),
        "renewal returns the fenced token"
    );
    let next = acquire(&mut c, "other", "bob", 10_000).unwrap();
    assert!(next > higher, "later grants are above the fenced token");
}

#[test]
fn status_reports_owner_token_ttl_and_holds() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(status(&mut c, "res"), None);
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    let (owner, got_token, ttl, holds) = status(&mut c, "res").unwrap();
    assert_eq!((owner.as_str(), got_token, holds), ("alice", token, 1));
    assert!((9_000..=10_000).contains(&ttl), "ttl {ttl}");
}

#[test]
fn status_is_a_map_in_resp3() {
    let server = Server::start();
    let client = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let mut c = client.get_connection().unwrap();
    acquire(&mut c, "res", "alice", 10_000).unwrap();
    let reply: Value = redis::cmd("DLOCK.STATUS").arg("res").query(&mut c).unwrap();
    let Value::Map(fields) = reply else {
        panic!("expected a RESP3 map, got {reply:?}")
    };
    assert_eq!(fields.len(), 5, "owner token ttl holds waiters");
}

#[test]
fn force_release_removes_any_owners_lock() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "alice", 10_000).unwrap();
    let force_release = |c: &mut Connection| -> i64 {
        let removed = redis::cmd("DLOCK.FORCERELEASE").arg("res").query(c);
        removed.expect("DLOCK.FORCERELEASE")
    };
    assert_eq!(force_release(&mut c), 1);
    assert_eq!(force_release(&mut c), 0, "nothing left to remove");
    assert!(acquire(&mut c, "res", "bob", 10_000).is_some());
}

#[test]
fn pttl_type_and_del_work_on_lock_keys() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "alice", 10_000).unwrap();
    let kind: String = redis::cmd("TYPE").arg("res").query(&mut c).unwrap();
    assert_eq!(kind, "dlocklock");
    assert!((9_000..=10_000).contains(&pttl(&mut c, "res")));
    let deleted: i64 = redis::cmd("DEL").arg("res").query(&mut c).unwrap();
    assert_eq!(deleted, 1);
    assert!(acquire(&mut c, "res", "bob", 10_000).is_some());
}

#[test]
fn tokens_strictly_increase_across_keys_and_regrants() {
    let server = Server::start();
    let mut c = server.conn();
    let mut last = 0;
    for i in 0..200 {
        let token = acquire(&mut c, &format!("k{}", i % 7), &format!("o{i}"), 10_000)
            .or_else(|| {
                release(&mut c, &format!("k{}", i % 7), &format!("o{}", i - 7));
                acquire(&mut c, &format!("k{}", i % 7), &format!("o{i}"), 10_000)
            })
            .expect("granted after release");
        assert!(token > last, "token {token} after {last}");
        last = token;
    }
}

#[test]
fn an_expired_lock_is_regranted_with_a_larger_token() {
    let server = Server::start();
    let mut c = server.conn();
    let first = acquire(&mut c, "res", "alice", 30).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(80));
    let second = acquire(&mut c, "res", "bob", 10_000).expect("expired lock is free");
    assert!(second > first);
    assert_eq!(
        release(&mut c, "res", "alice"),
        0,
        "the expired holder cannot release bob's lock"
    );
}

#[test]
fn clock_floor_puts_tokens_at_or_above_wall_clock_micros() {
    let server = Server::start();
    let mut c = server.conn();
    let before_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    assert!(
        token >= before_us,
        "token {token} below wall clock {before_us}"
    );
}

#[test]
fn info_section_counts_every_outcome() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "a", "x", 10_000).unwrap();
    acquire(&mut c, "b", "x", 20).unwrap();
    acquire(&mut c, "a", "y", 10_000);
    extend(&mut c, "a", "x", 10_000);
    let top = counter(&mut c) + 5;
    fence(&mut c, "a", "x", top);
    eventually("b is free", 2_000, || status(&mut c, "b").is_none());
    eventually("Redis reclaimed b's key", 5_000, || {
        redis::cmd("EXISTS").arg("b").query::<i64>(&mut c).unwrap() == 0
    });
    assert_info(
        &mut c,
        "before the release",
        &[
            ("grants", 2),
            ("contended", 1),
            ("extends", 1),
            ("fences", 1),
            ("expired_before_release", 1),
            ("locks_held", 1),
            ("fencing_counter", top),
        ],
    );
    release(&mut c, "a", "x");
    assert_info(
        &mut c,
        "after the release (not an expiry)",
        &[
            ("releases", 1),
            ("locks_held", 0),
            ("expired_before_release", 1),
            ("quarantine_left_ms", 0),
        ],
    );
}

/// Each (field, value) of `INFO dlock`, `when` naming the moment in a failure.
fn assert_info(c: &mut Connection, when: &str, expected: &[(&str, i64)]) {
    for &(field, value) in expected {
        assert_eq!(info_field(c, field), value, "{when}: dlock_{field}");
    }
}

#[test]
fn release_works_under_oom_while_acquire_is_refused() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "alice", 60_000).unwrap();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .exec(&mut c)
        .unwrap();
    let oom = error_of(&mut c, &["DLOCK.ACQUIRE", "other", "bob", "1000"]);
    assert!(oom.starts_with("OOM"), "{oom}");
    assert_eq!(
        release(&mut c, "res", "alice"),
        1,
        "release frees memory, so it runs under OOM"
    );
}

#[test]
fn commands_declare_key_positions_for_acl_and_cluster() {
    let server = Server::start();
    let mut c = server.conn();
    for (cmd, args) in [
        ("DLOCK.ACQUIRE", vec!["k", "o", "1000"]),
        ("DLOCK.RELEASE", vec!["k", "o"]),
        ("DLOCK.EXTEND", vec!["k", "o", "1000"]),
        ("DLOCK.FENCE", vec!["k", "o", "5"]),
        ("DLOCK.STATUS", vec!["k"]),
        ("DLOCK.FORCERELEASE", vec!["k"]),
    ] {
        let keys: Vec<String> = redis::cmd("COMMAND")
            .arg("GETKEYS")
            .arg(cmd)
            .arg(&args)
            .query(&mut c)
            .unwrap();
        assert_eq!(keys, ["k"], "{cmd}");
    }
    // An ACL user limited to `app:*` keys may lock app:x but not other:x.
    redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", "nopass", "~app:*", "+@all"])
        .exec(&mut c)
        .unwrap();
    redis::cmd("AUTH").arg("app").arg("x").exec(&mut c).unwrap();
    assert!(acquire(&mut c, "app:x", "o", 1_000).is_some());
    let denied = error_of(&mut c, &["DLOCK.ACQUIRE", "other:x", "o", "1000"]);
    assert!(denied.starts_with("NOPERM"), "{denied}");
}

#[test]
fn fence_px_resets_the_ttl_at_commit_and_a_bad_px_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 1_000).unwrap();
    let err = error_of(
        &mut c,
        &[
            "DLOCK.FENCE",
            "res",
            "alice",
            &(token + 5).to_string(),
            "PX",
            "0",
        ],
    );
    assert!(err.contains("PX"), "{err}");
    assert_eq!(
        status(&mut c, "res").unwrap().1,
        token,
        "refused FENCE changed nothing"
    );
    let fenced: i64 = redis::cmd("DLOCK.FENCE")
        .arg("res")
        .arg("alice")
        .arg(token + 5)
        .arg("PX")
        .arg(60_000)
        .query(&mut c)
        .unwrap();
    assert_eq!(fenced, 1);
    let (_, got, ttl, _) = status(&mut c, "res").unwrap();
    assert_eq!(got, token + 5);
    assert!(ttl > 50_000, "TTL reset by PX: {ttl}");
}
