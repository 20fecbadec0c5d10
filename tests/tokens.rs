//! Tokens and the counter stay within 1..=i64::MAX on every path: commands, effects, RESTORE
//! (tests/restore.rs), RDB and aux data. A grant past the maximum is refused, never wrapped;
//! FENCE never lowers a token.

use crate::common::dump::{self, uint};
use crate::common::*;

#[test]
fn fence_never_lowers_a_lock_token_or_the_counter() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "k", "o", 60_000).unwrap();
    let error = error_of(&mut c, &["DLOCK.FENCE", "k", "o", "7"]);
    assert!(error.contains("FENCE never lowers a token"), "{error}");
    assert_eq!(status(&mut c, "k").unwrap().1, token);
    assert_eq!(
        acquire(&mut c, "k", "o", 60_000),
        Some(token),
        "the same owner still gets its token"
    );
    assert_eq!(
        fence(&mut c, "k", "o", token),
        1,
        "committing the same token is fine"
    );
    assert_eq!(counter(&mut c), token);
}

#[test]
fn no_client_can_push_the_counter_to_its_maximum() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "lock:1", "o", 60_000).unwrap();
    // A user limited to lock keys can still run commands without keys.
    redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~lock:*", "+@all"])
        .exec(&mut c)
        .unwrap();
    let mut app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", server.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    let internal = effects_are_internal(&mut c);
    for args in [
        &["DLOCK.FENCE", "lock:1", "o", "9223372036854775807"][..],
        &["DLOCK.RAISE", "9223372036854775807"],
        &["DLOCK.APPLY", "lock:2", "o", "9223372036854775807", "1"],
    ] {
        let error = error_of(&mut app, args);
        let expected = if internal && args[0] != "DLOCK.FENCE" {
            "ERR unknown command"
        } else {
            "ERR token 9223372036854775807 is beyond"
        };
        assert!(error.starts_with(expected), "{args:?}: {error}");
    }
    let before = counter(&mut c);
    let next = acquire(&mut c, "lock:3", "o", 60_000).unwrap();
    assert!(
        next > before && next < i64::MAX / 2,
        "tokens go on normally: {next}"
    );
}

/// Saves an RDB with a counter, then rewrites the saved counter to `value` (aux data) with a
/// valid file checksum.
fn rdb_with_counter(value: u64) -> tempfile::TempDir {
    let server = Server::builder().config("dbfilename", "dump.rdb").start();
    let mut c = server.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    let counter_now = counter(&mut c) as u64;
    let module_id = dump::dump(&mut c, "k")[2..10].to_vec();
    redis::cmd("FLUSHALL").exec(&mut c).unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap();
    let dir = server.into_dir();
    let path = dir.path().join("dump.rdb");
    let file = std::fs::read(&path).unwrap();
    // MODULE_AUX opcode, the type's id, `when` (before keys), then the counter.
    let aux = [&[0xF7, 0x81][..], &module_id, &uint(1), &uint(counter_now)].concat();
    let at = file
        .windows(aux.len())
        .position(|w| w == aux.as_slice())
        .expect("the aux counter in the RDB");
    let value_at = at + aux.len() - uint(counter_now).len();
    let patched = [
        &file[..value_at],
        &uint(value)[..],
        &file[at + aux.len()..file.len() - 8],
    ]
    .concat();
    let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(&patched);
    std::fs::write(&path, [patched, crc.to_le_bytes().to_vec()].concat()).unwrap();
    dir
}

#[test]
fn a_saved_counter_beyond_the_token_range_fails_the_load_cleanly() {
    let dir = rdb_with_counter(u64::MAX);
    let mut server = Server::builder()
        .config("dbfilename", "dump.rdb")
        .start_in_failing(dir);
    assert!(!server.is_running());
    let log = server.log();
    assert!(log.contains("refusing the saved fencing counter"), "{log}");
    server.assert_no_crash();
}

#[test]
fn an_exhausted_counter_refuses_grants_instead_of_wrapping() {
    let dir = rdb_with_counter(i64::MAX as u64 - 1);
    let server = Server::builder()
        .config("dbfilename", "dump.rdb")
        .start_in(dir);
    let mut c = server.conn();
    assert_eq!(counter(&mut c), i64::MAX - 1);
    assert_eq!(
        acquire(&mut c, "a", "o", 60_000),
        Some(i64::MAX),
        "the last token"
    );
    let error = error_of(&mut c, &["DLOCK.ACQUIRE", "b", "o", "60000"]);
    assert!(
        error.starts_with("ERR the fencing counter reached its maximum"),
        "{error}"
    );
    assert_eq!(status(&mut c, "b"), None);
    assert_eq!(
        acquire(&mut c, "a", "o", 60_000),
        Some(i64::MAX),
        "renewals still work"
    );
    assert_eq!(release(&mut c, "a", "o"), 1, "and releases");
    assert_eq!(counter(&mut c), i64::MAX);
}
