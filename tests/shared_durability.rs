//! Shared locks and semaphores survive and travel like plain locks: a replica follows them
//! holder by holder (ended leases included, dropped by the master's writes, never by the
//! replica's clock), restarts from RDB or AOF (rewritten or not) keep every holder, DEBUG RELOAD
//! too; the key expires with the last lease; RESTORE validates every holder, and a value carried
//! to another key is not held there.

use crate::common::dump::{dump, restore, string, uint, Parts};
use crate::common::group::{group_status, owners, take, GroupStatus, Kind};
use crate::common::*;

use std::thread;
use std::time::Duration;

const MIN: i64 = 60_000;

/// Readers, a downgrade, a semaphore whose short lease ended and was dropped by a later grant.
fn make_groups(c: &mut Connection) {
    take(c, "doc", "r1", MIN, Kind::Shared).unwrap();
    take(c, "doc", "r2", MIN, Kind::Shared).unwrap();
    assert_eq!(release(c, "doc", "r1"), 1);
    take(c, "down", "w", MIN, Kind::Exclusive).unwrap();
    take(c, "down", "w", MIN, Kind::Shared).unwrap();
    take(c, "pool", "short", 100, Kind::Limit(2)).unwrap();
    take(c, "pool", "a", MIN, Kind::Limit(2)).unwrap();
    thread::sleep(Duration::from_millis(150));
    take(c, "pool", "b", MIN, Kind::Limit(2)).unwrap();
}

/// A resource as (kind, limit, holders as (owner, token, mode)), without the ttl, which moves.
type Snapshot = (String, Option<i64>, Vec<(String, i64, String)>);

/// Holders as (owner, token, mode), without the ttl, which moves.
fn holders(c: &mut Connection, key: &str) -> Option<Snapshot> {
    let (kind, limit, holders, _): GroupStatus = group_status(c, key)?;
    let list = holders
        .into_iter()
        .map(|h| (h.owner, h.token, h.mode))
        .collect();
    Some((kind, limit, list))
}

fn snapshot(c: &mut Connection) -> Vec<Option<Snapshot>> {
    ["doc", "down", "pool"]
        .iter()
        .map(|k| holders(c, k))
        .collect()
}

fn debug() -> dlock_testkit::Builder {
    Server::builder().config("enable-debug-command", "yes")
}

fn digest(c: &mut Connection, key: &str) -> String {
    let d: Vec<String> = redis::cmd("DEBUG")
        .arg("DIGEST-VALUE")
        .arg(key)
        .query(c)
        .unwrap();
    d.concat()
}

#[test]
fn a_replica_follows_every_holder_and_digests_alike() {
    let master = debug().start();
    let replica = replica_built(&master, debug());
    let (mut m, mut r) = (master.conn(), replica.conn());
    make_groups(&mut m);
    sync(&mut m);
    let expected = snapshot(&mut m);
    assert_eq!(
        expected[2].as_ref().map(|s| s.2.len()),
        Some(2),
        "the ended lease was dropped"
    );
    assert_eq!(snapshot(&mut r), expected);
    for key in ["doc", "down", "pool"] {
        assert_eq!(
            digest(&mut r, key),
            digest(&mut m, key),
            "{key}: same stored value"
        );
    }
    assert_eq!(release(&mut m, "down", "w"), 1);
    assert_eq!(release(&mut m, "down", "w"), 1);
    assert_eq!(release(&mut m, "doc", "r2"), 1);
    sync(&mut m);
    assert_eq!(snapshot(&mut r), snapshot(&mut m));
    let exists: i64 = redis::cmd("EXISTS")
        .arg("doc")
        .arg("down")
        .query(&mut r)
        .unwrap();
    assert_eq!(exists, 0, "gone with their last holder, on the replica too");
}

#[test]
fn restarts_from_rdb_and_aof_keep_every_holder_and_the_counter() {
    let aof = |preamble: &str| {
        Server::builder()
            .config("appendonly", "yes")
            .config("appendfsync", "always")
            .config("aof-use-rdb-preamble", preamble)
    };
    for (name, builder, rewrite) in [
        ("rdb", Server::builder().config("save", "3600 1"), false),
        ("aof", aof("no"), false),
        ("aof rewritten", aof("no"), true),
        ("aof with preamble, rewritten", aof("yes"), true),
    ] {
        let mut server = builder.start();
        let mut c = server.conn();
        make_groups(&mut c);
        let (before, counter_before) = (snapshot(&mut c), counter(&mut c));
        if rewrite {
            redis::cmd("BGREWRITEAOF").exec(&mut c).unwrap();
            eventually("rewrite done", 10_000, || {
                info_field_of(&mut c, "persistence", "aof_rewrite_in_progress") == 0
            });
        }
        if name == "rdb" {
            redis::cmd("SAVE").exec(&mut c).unwrap();
        }
        server.restart();
        let mut c = server.conn();
        assert_eq!(snapshot(&mut c), before, "{name}");
        assert!(counter(&mut c) >= counter_before, "{name}: counter kept");
        let pttl = pttl(&mut c, "pool");
        assert!(
            (50_000..=MIN).contains(&pttl),
            "{name}: the key lives with its last lease: {pttl}"
        );
    }
}

#[test]
fn debug_reload_keeps_holders_and_the_key_expires_with_the_last_lease() {
    let server = debug().start();
    let mut c = server.conn();
    take(&mut c, "doc", "long", MIN, Kind::Shared).unwrap();
    take(&mut c, "doc", "short", 5_000, Kind::Shared).unwrap();
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    assert_eq!(owners(&mut c, "doc"), ["long", "short"]);
    assert!(pttl(&mut c, "doc") > 50_000);
    assert_eq!(release(&mut c, "doc", "long"), 1);
    assert!(
        pttl(&mut c, "doc") <= 5_000,
        "pulled back to the last lease left"
    );
    redis::cmd("PEXPIRE")
        .arg("doc")
        .arg(600_000)
        .exec(&mut c)
        .unwrap();
    // The module's sweep pulls it back within about a second (tests/key_ttl.rs).
    eventually(
        "a lengthening PEXPIRE cannot outlive the leases",
        2_500,
        || pttl(&mut c, "doc") <= 5_000,
    );
}

fn info_field_of(c: &mut Connection, section: &str, field: &str) -> i64 {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} missing"))
}

/// The fields of a group: limit, place, then (owner, mode, token, holds, deadline) per holder.
fn group_fields(limit: u64, place: u64, holders: &[(&str, u64, u64)]) -> Vec<u8> {
    group_fields_until(limit, place, holders, soon_ms())
}

/// As [`group_fields`], every lease ending at `deadline`.
fn group_fields_until(
    limit: u64,
    place: u64,
    holders: &[(&str, u64, u64)],
    deadline: u64,
) -> Vec<u8> {
    let mut out = [uint(limit), uint(place), uint(holders.len() as u64)].concat();
    for (owner, mode, token) in holders {
        out.extend(
            [
                string(owner.as_bytes()),
                uint(*mode),
                uint(*token),
                uint(1),
                uint(deadline),
            ]
            .concat(),
        );
    }
    out
}

#[test]
fn restore_takes_a_group_back_but_refuses_holders_that_cannot_coexist() {
    let server = Server::start();
    let mut c = server.conn();
    take(&mut c, "doc", "r1", MIN, Kind::Shared).unwrap();
    take(&mut c, "doc", "r2", MIN, Kind::Shared).unwrap();
    let before = holders(&mut c, "doc");
    let payload = dump(&mut c, "doc");
    assert_eq!(
        restore(&mut c, "doc", &payload),
        None,
        "a group's own DUMP restores"
    );
    assert_eq!(holders(&mut c, "doc"), before);
    let parts = Parts::of(&payload);
    let far = soon_ms() + 86_400_000 + 120_000; // past now + max-ttl-ms + the 60 s slack
    let cases: [(&str, Vec<u8>); 7] = [
        (
            "two writers",
            group_fields(0, 1, &[("a", 0, 5), ("b", 0, 6)]),
        ),
        (
            "a writer beside a reader",
            group_fields(0, 1, &[("a", 0, 5), ("b", 1, 6)]),
        ),
        (
            "permits over the limit",
            group_fields(1, 1, &[("a", 2, 5), ("b", 2, 6)]),
        ),
        (
            "a token beyond a year ahead",
            group_fields(2, 1, &[("a", 2, 9_000_000_000_000_000)]),
        ),
        (
            "a semaphore holder whose lease ends at 2^64-1",
            group_fields_until(2, 1, &[("a", 2, 5)], u64::MAX),
        ),
        (
            "a semaphore holder whose lease ends at 2^63",
            group_fields_until(2, 1, &[("a", 2, 5)], 1 << 63),
        ),
        (
            "a lease longer than dlock.max-ttl-ms",
            group_fields_until(2, 1, &[("a", 2, 5)], far),
        ),
    ];
    // The same encoding with holders that can coexist is taken: the refusals below are theirs.
    let valid = parts.payload(
        &parts.header,
        &group_fields(2, 1, &[("a", 2, 5), ("b", 2, 6)]),
        true,
    );
    assert_eq!(restore(&mut c, "elsewhere", &valid), None);
    for (name, fields) in cases {
        let crafted = parts.payload(&parts.header, &fields, true);
        let refused = restore(&mut c, "doc", &crafted);
        assert!(
            refused.is_some_and(|e| e.contains("Bad data format")),
            "{name}"
        );
        assert_eq!(holders(&mut c, "doc"), before, "{name}: nothing changed");
    }
}

#[test]
fn a_group_carried_to_another_key_is_not_held_there() {
    let server = Server::start();
    let mut c = server.conn();
    take(&mut c, "pool", "a", MIN, Kind::Limit(1)).unwrap();
    redis::cmd("RENAME")
        .arg("pool")
        .arg("other")
        .exec(&mut c)
        .unwrap();
    assert_eq!(group_status(&mut c, "other"), None, "moved: held nowhere");
    assert!(take(&mut c, "other", "b", MIN, Kind::Limit(1)).is_some());
    assert!(
        take(&mut c, "pool", "c", MIN, Kind::Limit(1)).is_some(),
        "the old name is free"
    );
}
