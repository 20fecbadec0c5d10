//! A lock key expires at its lock's deadline however the value arrived or the key's TTL was
//! changed: RESTORE with any TTL (0, longer, shorter, REPLACE), an RDB whose key TTL does not match
//! (DEBUG RELOAD), a replica applying its master's RESTORE, PERSIST and a lengthening PEXPIRE
//! (pulled back by the module's sweep within about a second, nobody touching the key).
//! Before, each of these could leave the key in the keyspace after its lock had ended, for good
//! (no TTL) or long after, invisible to `volatile-*` eviction. A key whose lock has ended goes
//! away by active expiry, with nobody touching it.

use crate::common::dump::{dump, restore};
use crate::common::*;

/// How far apart PTTL and the lock's ttl may be read (two commands on a loaded machine).
const SLACK_MS: i64 = 50;

/// Asserts that `key`'s PTTL is within a few ms of its lock's remaining ttl; returns the ttl.
fn assert_key_expires_with_the_lock(c: &mut Connection, key: &str) -> i64 {
    let (_, _, ttl, _) = status(c, key).expect("the lock is held");
    let pttl = pttl(c, key);
    assert!(
        (pttl - ttl).abs() <= SLACK_MS,
        "{key}: PTTL {pttl} ms, lock ttl {ttl} ms"
    );
    ttl
}

/// How long the sweep takes to pull back a key's TTL on a keyspace of up to 1,000 keys (one step
/// a second, the first within a second of the PERSIST).
const SWEEP_MS: u64 = 2_500;

/// Waits, reading only STATUS and PTTL, until `key`'s PTTL is back within a few ms of its lock's
/// remaining ttl (the sweep pulled it back).
fn assert_pulled_back(c: &mut Connection, key: &str) {
    assert_pulled_back_within(c, key, SWEEP_MS);
}

fn assert_pulled_back_within(c: &mut Connection, key: &str, within_ms: u64) {
    let what = format!("{key}'s TTL back at its lock's deadline");
    eventually(&what, within_ms, || {
        let (_, _, ttl, _) = status(c, key).expect("the lock is still held");
        (pttl(c, key) - ttl).abs() <= SLACK_MS
    });
}

/// Waits, without touching any key, until the database is empty (active expiry deleted it).
fn assert_gone_untouched(c: &mut Connection, within_ms: u64) {
    eventually("the ended lock's key expired", within_ms, || {
        redis::cmd("DBSIZE").query::<i64>(c).unwrap() == 0
    });
}

/// A lock on `key` for `ttl_ms`, dumped, then released: the payload to RESTORE.
fn dumped_and_released(c: &mut Connection, key: &str, ttl_ms: i64) -> Vec<u8> {
    acquire(c, key, "owner1", ttl_ms).unwrap();
    let payload = dump(c, key);
    assert_eq!(release(c, key, "owner1"), 1);
    payload
}

fn restore_with_ttl(c: &mut Connection, key: &str, ttl_ms: i64, payload: &[u8]) {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(ttl_ms)
        .arg(payload)
        .exec(c)
        .expect("RESTORE");
}

#[test]
fn restore_with_no_ttl_longer_or_shorter_sets_the_key_ttl_to_the_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    for (key, restore_ttl) in [("none", 0), ("longer", 60_000), ("shorter", 100)] {
        let payload = dumped_and_released(&mut c, key, 2_000);
        restore_with_ttl(&mut c, key, restore_ttl, &payload);
        let ttl = assert_key_expires_with_the_lock(&mut c, key);
        assert!(ttl > 1_000, "{key}: the lock came back held, ttl {ttl}");
    }
    assert_gone_untouched(&mut c, 4_000);
}

#[test]
fn restore_replace_over_a_live_lock_takes_the_restored_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    let payload = dumped_and_released(&mut c, "k", 1_500);
    acquire(&mut c, "k", "other", 60_000).unwrap();
    assert!(
        restore(&mut c, "k", &payload).is_none(),
        "RESTORE ... REPLACE"
    );
    let ttl = assert_key_expires_with_the_lock(&mut c, "k");
    assert!(
        ttl <= 1_500,
        "the restored lock's deadline, not the replaced one's: {ttl}"
    );
    assert_gone_untouched(&mut c, 3_500);
}

#[test]
fn a_restored_lock_that_has_already_ended_goes_away() {
    let server = Server::start();
    let mut c = server.conn();
    let payload = dumped_and_released(&mut c, "k", 200);
    std::thread::sleep(std::time::Duration::from_millis(300));
    restore_with_ttl(&mut c, "k", 0, &payload);
    assert_eq!(status(&mut c, "k"), None, "not held: its deadline passed");
    assert_gone_untouched(&mut c, 2_000);
}

#[test]
fn persist_and_a_lengthening_pexpire_are_pulled_back_to_the_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "persisted", "o", 4_000).unwrap();
    acquire(&mut c, "lengthened", "o", 4_000).unwrap();
    let _: i64 = redis::cmd("PERSIST")
        .arg("persisted")
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("PEXPIRE")
        .arg("lengthened")
        .arg(60_000)
        .query(&mut c)
        .unwrap();
    assert_eq!(
        pttl(&mut c, "persisted"),
        -1,
        "PERSIST took (the sweep comes later)"
    );
    assert_pulled_back(&mut c, "persisted");
    assert_pulled_back(&mut c, "lengthened");
    // A shortening PEXPIRE stands: it ends the lock early, like DLOCK.FORCERELEASE.
    acquire(&mut c, "shortened", "o", 60_000).unwrap();
    let _: i64 = redis::cmd("PEXPIRE")
        .arg("shortened")
        .arg(300)
        .query(&mut c)
        .unwrap();
    assert!(pttl(&mut c, "shortened") <= 300);
    assert_gone_untouched(&mut c, 6_000);
}

#[test]
fn an_rdb_whose_key_ttl_does_not_match_loads_with_the_deadline() {
    // Saved without a checksum so that the key's expiry can be edited in the file, as an RDB
    // written before this rule (or by hand) could carry it.
    let server = Server::builder()
        .config("enable-debug-command", "yes")
        .config("rdbchecksum", "no")
        .start();
    let mut c = server.conn();
    acquire(&mut c, "k", "o", 2_000).unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap();
    let path = server.dir().join("dump.rdb");
    let mut rdb = std::fs::read(&path).unwrap();
    let now_ms = unix_ms();
    let at = expiry_offsets(&rdb, now_ms..now_ms + 3_000);
    assert_eq!(at.len(), 1, "one key expiry in the RDB");
    let later = now_ms + 3_600_000;
    rdb[at[0]..at[0] + 8].copy_from_slice(&later.to_le_bytes());
    std::fs::write(&path, rdb).unwrap();
    redis::cmd("DEBUG")
        .arg("RELOAD")
        .arg("NOSAVE")
        .exec(&mut c)
        .unwrap();
    assert_key_expires_with_the_lock(&mut c, "k");
    assert_gone_untouched(&mut c, 3_500);
}

#[test]
fn debug_reload_after_a_restore_keeps_the_deadline() {
    let server = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let mut c = server.conn();
    let payload = dumped_and_released(&mut c, "k", 2_000);
    restore_with_ttl(&mut c, "k", 0, &payload);
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    assert_key_expires_with_the_lock(&mut c, "k");
    assert_gone_untouched(&mut c, 3_500);
}

#[test]
fn a_replica_applying_its_masters_restore_expires_the_key_with_the_lock() {
    let master = Server::start();
    let replica = replica_of(&master);
    let mut m = master.conn();
    let mut r = replica.conn();
    let payload = dumped_and_released(&mut m, "k", 2_000);
    restore_with_ttl(&mut m, "k", 0, &payload);
    sync(&mut m);
    assert_key_expires_with_the_lock(&mut m, "k");
    assert_key_expires_with_the_lock(&mut r, "k");
    // The master's active expiry deletes the key and replicates the DEL.
    assert_gone_untouched(&mut r, 3_500);
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Offsets of the 8-byte expiries (after the RDB opcode 0xFC, EXPIRETIME_MS) within `range`.
fn expiry_offsets(rdb: &[u8], range: std::ops::Range<u64>) -> Vec<usize> {
    (0..rdb.len().saturating_sub(9))
        .filter(|&i| rdb[i] == 0xFC)
        .map(|i| i + 1)
        .filter(|&at| {
            let ms = u64::from_le_bytes(rdb[at..at + 8].try_into().unwrap());
            range.contains(&ms)
        })
        .collect()
}

/// One RESP command.
fn resp(args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out += &format!("${}\r\n{a}\r\n", a.len());
    }
    out
}

#[test]
fn an_aof_of_the_first_version_loads_with_the_key_ttl_as_the_deadline() {
    // dlock 0.1.0 rewrote a lock without a deadline of its own as `DLOCK.APPLY key owner token
    // holds` followed by the key's `PEXPIREAT`: the key's TTL was the lock's.
    let dir = tempfile::tempdir().unwrap();
    let aof_dir = dir.path().join("appendonlydir");
    std::fs::create_dir(&aof_dir).unwrap();
    let at = (unix_ms() + 5_000).to_string();
    let base = [
        resp(&["SELECT", "0"]),
        resp(&["DLOCK.APPLY", "k", "old-owner", "42", "1"]),
        resp(&["PEXPIREAT", "k", &at]),
    ]
    .concat();
    std::fs::write(aof_dir.join("appendonly.aof.1.base.aof"), base).unwrap();
    std::fs::write(
        aof_dir.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.base.aof seq 1 type b\n",
    )
    .unwrap();
    let server = Server::builder()
        .config("appendonly", "yes")
        .config("appenddirname", "appendonlydir")
        .start_in(dir);
    let mut c = server.conn();
    let (owner, token, ttl, _) = status(&mut c, "k").expect("held after the replay");
    assert_eq!((owner.as_str(), token), ("old-owner", 42));
    assert!(ttl <= 5_000, "the key's TTL is the deadline: {ttl}");
    let _: i64 = redis::cmd("PERSIST").arg("k").query(&mut c).unwrap();
    assert_pulled_back(&mut c, "k");
    assert_gone_untouched(&mut c, 6_500);
}

#[test]
fn a_version_one_value_restored_without_a_ttl_is_never_eternal() {
    let server = Server::start();
    let mut c = server.conn();
    let (_, parts, _) = {
        acquire(&mut c, "seed", "o", 60_000).unwrap();
        let payload = dump(&mut c, "seed");
        let parts = crate::common::dump::Parts::of(&payload);
        (payload, parts, ())
    };
    let v1 = parts.payload(
        &parts.with_encver(1),
        &[
            crate::common::dump::string(b"old"),
            crate::common::dump::uint(42),
            crate::common::dump::uint(1),
        ]
        .concat(),
        true,
    );
    restore_with_ttl(&mut c, "k", 0, &v1);
    let _: i64 = redis::cmd("PERSIST").arg("k").query(&mut c).unwrap();
    let (_, _, ttl, _) = status(&mut c, "k").expect("held");
    // No deadline of its own and no key TTL: the longest lease the node grants, not forever.
    let max = 86_400_000 + 60_000;
    assert!((1..=max).contains(&ttl), "ttl {ttl}");
    eventually("the key expires too", SWEEP_MS, || {
        (1..=max).contains(&pttl(&mut c, "k"))
    });
}

#[test]
fn the_sweep_reaches_a_lock_among_many_plain_keys_in_another_database() {
    let server = Server::start();
    let mut c = server.conn();
    redis::cmd("SELECT").arg(3).exec(&mut c).unwrap();
    let mut fill = redis::pipe();
    // 2,500 keys: three steps of the sweep, a second apart.
    for i in 0..2_500 {
        fill.cmd("SET").arg(format!("plain:{i}")).arg("v").ignore();
    }
    fill.exec(&mut c).unwrap();
    acquire(&mut c, "k", "o", 10_000).unwrap();
    let _: i64 = redis::cmd("PERSIST").arg("k").query(&mut c).unwrap();
    assert_pulled_back_within(&mut c, "k", 6_000);
    let plain: i64 = redis::cmd("PTTL").arg("plain:0").query(&mut c).unwrap();
    assert_eq!(plain, -1, "keys that are not locks are left alone");
}
