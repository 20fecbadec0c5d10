//! RESTORE of crafted lock values, truncated RDB files and diskless replica loads: every
//! malformed value is refused whole (`ERR Bad data format`, or a clean failure to load), the
//! server stays up, and a refused RESTORE changes nothing — not even the fencing counter.

use crate::common::dump::{self, lock_fields, string, uint, Parts};
use crate::common::*;

/// A lock on `key`: its DUMP, the DUMP's parts, and the server's counter after it.
fn dumped(c: &mut Connection, key: &str) -> (Vec<u8>, Parts, i64) {
    acquire(c, key, "owner1", 60_000).unwrap();
    let payload = dump::dump(c, key);
    let parts = Parts::of(&payload);
    (payload, parts, counter(c))
}

#[test]
fn the_payload_encoder_matches_what_the_module_dumps() {
    let server = Server::builder().config("dlock.clock-floor", "no").start();
    let mut c = server.conn();
    let (payload, parts, _) = dumped(&mut c, "lock:a");
    // Rebuild the same payload field by field from what the lock holds.
    let n = payload.len();
    let fields = &payload[10..n - 11];
    assert_eq!(parts.payload(&parts.header, fields, true), payload);
    assert_eq!(fields[..8], string(b"owner1")[..]);
    assert_eq!(
        fields[8..10],
        uint(1)[..],
        "token 1 without the clock floor"
    );
}

/// Malformed values, each named, built from a valid DUMP (for its header and RDB version) and
/// the counter before: a token above it would raise the counter if the value got in.
fn malformed(payload: &[u8], parts: &Parts, counter_before: i64) -> Vec<(&'static str, Vec<u8>)> {
    let with = |fields: &[u8]| parts.payload(&parts.header, fields, true);
    let lock = |owner: &[u8], token, holds, deadline_ms| {
        with(&lock_fields(owner, token, holds, deadline_ms, 99))
    };
    let soon = soon_ms();
    let good = lock_fields(b"o", 5, 1, soon, 99);
    let above = lock_fields(b"o", counter_before as u64 + 1_000_000, 1, soon, 99);
    let without_place = [string(b"o"), uint(5), uint(1), uint(soon)].concat();
    let token_as_string = [string(b"o"), string(b"5"), uint(1), uint(soon), uint(99)].concat();
    let huge_owner = [vec![dump::STRING], dump::len(1 << 40), b"xx".to_vec()].concat();
    vec![
        ("missing field", with(&without_place)),
        ("wrong field marker", with(&token_as_string)),
        ("owner length 2^40", with(&huge_owner)),
        ("empty owner", lock(b"", 5, 1, soon)),
        ("owner of 257 bytes", lock(&[b'x'; 257], 5, 1, soon)),
        ("token 0", lock(b"o", 0, 1, soon)),
        ("token 2^64-1", lock(b"o", u64::MAX, 1, soon)),
        ("token 2^63", lock(b"o", 1 << 63, 1, soon)),
        (
            "token i64::MAX (far beyond the clock)",
            lock(b"o", i64::MAX as u64, 1, soon),
        ),
        ("holds 0", lock(b"o", 5, 0, soon)),
        ("holds 65536", lock(b"o", 5, 65_536, soon)),
        ("deadline 0", lock(b"o", 5, 1, 0)),
        // The value that once meant "follow the key's TTL": PERSIST then made an eternal lock.
        ("deadline 2^64-1", lock(b"o", 5, 1, u64::MAX)),
        ("deadline 2^63", lock(b"o", 5, 1, 1 << 63)),
        (
            "a lease longer than dlock.max-ttl-ms",
            lock(b"o", 5, 1, soon + 86_400_000 + 120_000),
        ),
        (
            "encoding version 3",
            parts.payload(&parts.with_encver(3), &good, true),
        ),
        (
            "encoding version 0",
            parts.payload(&parts.with_encver(0), &good, true),
        ),
        (
            "truncated",
            dump::seal(payload[..20].to_vec(), parts.version),
        ),
        // The value itself loads, then Redis finds no end marker and drops it: the counter must
        // not have moved for the dropped value (it used to rise before the check).
        ("no end marker", parts.payload(&parts.header, &above, false)),
        ("an extra field", with(&[above, uint(7)].concat())),
    ]
}

#[test]
fn crafted_values_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let (payload, parts, counter_before) = dumped(&mut c, "lock:a");
    let cases = malformed(&payload, &parts, counter_before);
    for (what, payload) in cases {
        let error =
            dump::restore(&mut c, "lock:b", &payload).unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(error.contains("Bad data format"), "{what}: {error}");
        assert_eq!(counter(&mut c), counter_before, "{what}: the counter moved");
        let exists: i64 = redis::cmd("EXISTS").arg("lock:b").query(&mut c).unwrap();
        assert_eq!(exists, 0, "{what}: a key was created");
    }
    assert!(
        status(&mut c, "lock:a").is_some(),
        "the original lock is untouched"
    );
    server.assert_no_crash();
}

#[test]
fn a_valid_restore_under_the_same_name_holds_and_raises_the_counter() {
    let server = Server::start();
    let mut c = server.conn();
    let (payload, parts, _) = dumped(&mut c, "lock:a");
    let place = u64::from_be_bytes(
        payload[payload.len() - 19..payload.len() - 11]
            .try_into()
            .unwrap(),
    );
    let token = counter(&mut c) as u64 + 1_000_000; // within a year of the clock
    let forged = parts.payload(
        &parts.header,
        &lock_fields(b"owner2", token, 2, soon_ms(), place),
        true,
    );
    assert_eq!(dump::restore(&mut c, "lock:a", &forged), None);
    let (owner, restored_token, _, holds) = status(&mut c, "lock:a").expect("held");
    assert_eq!(
        (owner.as_str(), restored_token as u64, holds),
        ("owner2", token, 2)
    );
    assert_eq!(
        counter(&mut c) as u64,
        token,
        "the counter rose once the key was in"
    );
}

#[test]
fn a_version_one_value_still_loads_with_its_key_ttl_as_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    let (_, parts, _) = dumped(&mut c, "lock:a");
    let v1 = parts.payload(
        &parts.with_encver(1),
        &[string(b"old"), uint(42), uint(1)].concat(),
        true,
    );
    let restored: redis::RedisResult<()> = redis::cmd("RESTORE")
        .arg("lock:old")
        .arg(5_000)
        .arg(&v1[..])
        .exec(&mut c);
    restored.expect("a version-1 value restores");
    let (owner, token, ttl, _) = status(&mut c, "lock:old").expect("held");
    assert_eq!((owner.as_str(), token), ("old", 42));
    assert!(
        (1..=5_000).contains(&ttl),
        "the key's TTL is the deadline: {ttl}"
    );
}

#[test]
fn a_truncated_rdb_fails_to_load_cleanly() {
    let mut server = Server::builder().config("dbfilename", "dump.rdb").start();
    let mut c = server.conn();
    acquire(&mut c, "lock:a", "owner-with-a-long-name", 60_000).unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap();
    server.kill();
    let path = server.dir().join("dump.rdb");
    let bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(10)
        .position(|w| w == b"owner-with")
        .expect("the owner in the file");
    std::fs::write(&path, &bytes[..at + 5]).unwrap(); // cut inside the lock value
    let log_before = server.log().len();
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.restart()));
    assert!(started.is_err(), "the server refused the truncated file");
    let log = server.log()[log_before..].to_string();
    assert!(
        !log.contains("Guru Meditation") && !log.contains("crashed by signal"),
        "an abort:\n{log}"
    );
    assert!(
        log.contains("Short read")
            || log.contains("short read")
            || log.contains("Terminating server"),
        "{log}"
    );
}

#[test]
fn replicas_keep_diskless_loading() {
    for mode in ["on-empty-db", "swapdb"] {
        let master = Server::builder()
            .config("repl-diskless-sync", "yes")
            .start();
        let mut c = master.conn();
        acquire(&mut c, "lock:a", "o", 60_000).unwrap();
        let replica = Server::builder()
            .config("replicaof", &format!("127.0.0.1 {}", master.port()))
            .config("repl-diskless-load", mode)
            .start();
        let mut r = replica.conn();
        eventually("synced", 10_000, || status(&mut r, "lock:a").is_some());
        assert_eq!(
            counter(&mut r),
            counter(&mut c),
            "{mode}: the counter came along"
        );
        let log = replica.log();
        assert!(
            !log.contains("Skipping diskless-load"),
            "{mode}: fell back to disk:\n{log}"
        );
        assert!(
            log.contains("Loading DB in memory"),
            "{mode}: {}",
            replica.log_tail()
        );
    }
}

#[test]
fn a_grant_in_the_transaction_of_a_restore_takes_a_larger_token_than_the_restored_one() {
    // The counter rises to a RESTOREd token once the key is in (after the command); a grant on
    // the same key inside the same MULTI still gets a larger token: a grant floors the counter
    // at the tokens stored under its key.
    let server = Server::start();
    let mut c = server.conn();
    let (_, parts, counter_before) = dumped(&mut c, "lock:a");
    let restored = counter_before as u64 + 1_000_000;
    let ended = soon_ms() - 60_000; // the restored lock's lease has ended: the key is free
    let payload = parts.payload(
        &parts.header,
        &lock_fields(b"old", restored, 1, ended, 99),
        true,
    );
    let (_, granted): (String, i64) = redis::pipe()
        .atomic()
        .cmd("RESTORE")
        .arg("lock:b")
        .arg(60_000)
        .arg(&payload)
        .cmd("DLOCK.ACQUIRE")
        .arg("lock:b")
        .arg("new")
        .arg(10_000)
        .query(&mut c)
        .expect("MULTI RESTORE ACQUIRE EXEC");
    assert!(
        granted as u64 > restored,
        "granted {granted} after restoring token {restored}"
    );
}

/// The form follows from the holders whatever brought them: a table of one exclusive holder,
/// RESTOREd whole (no write of the module made it), is a plain lock once it is in, as a write
/// would have left it — on this node and on a replica, which runs the same RESTORE.
#[test]
fn a_restored_table_of_one_exclusive_holder_becomes_a_plain_lock() {
    let master = Server::start();
    let replica = replica_of(&master);
    let (mut c, mut r) = (master.conn(), replica.conn());
    let (plain, _, _) = dumped(&mut c, "t");
    let place = u64::from_be_bytes(
        plain[plain.len() - 19..plain.len() - 11]
            .try_into()
            .unwrap(),
    );
    redis::cmd("DLOCK.ACQUIRE")
        .arg(&["rw", "reader", "60000", "SHARED"])
        .exec(&mut c)
        .unwrap();
    let table = Parts::of(&dump::dump(&mut c, "rw"));
    let token = counter(&mut c) as u64 + 1_000;
    let fields = [
        uint(0),           // a lock's table
        uint(place),       // granted under "t" in db 0
        uint(1),           // one holder
        string(b"writer"), // ... exclusive
        uint(0),
        uint(token),
        uint(1),
        uint(soon_ms()),
    ]
    .concat();
    let forged = table.payload(&table.header, &fields, true);
    redis::cmd("DEL").arg("t").exec(&mut c).unwrap();
    assert_eq!(dump::restore(&mut c, "t", &forged), None);
    sync(&mut c);
    for (side, conn) in [("master", &mut c), ("replica", &mut r)] {
        let kind: String = redis::cmd("TYPE").arg("t").query(conn).unwrap();
        assert_eq!(kind, "dlocklock", "{side}: the form follows the holders");
        let (owner, held, _, holds) = status(conn, "t").expect("held");
        assert_eq!(
            (owner.as_str(), held as u64, holds),
            ("writer", token, 1),
            "{side}"
        );
    }
    assert!(pttl(&mut c, "t") > 0, "the key expires with the lease");
}
