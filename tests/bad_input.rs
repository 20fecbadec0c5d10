//! Bad input gets a clear error that names the argument and range, and changes nothing.

mod common;
use common::*;

/// (command and arguments, expected start of the error, a fragment it must contain)
const CASES: &[(&[&str], &str, &str)] = &[
    (
        &["DLOCK.ACQUIRE", "k", "o"],
        "ERR wrong number of arguments for 'dlock.acquire' command",
        "",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "1", "REENTRANT", "x"],
        "ERR unknown option 'x', allowed: REENTRANT",
        "",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "1", "REENTRANT", "reentrant"],
        "ERR option REENTRANT given more than once",
        "",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "abc"],
        "ERR ttl-ms must be an integer from 1 to 86400000",
        "'abc'",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "0"],
        "ERR ttl-ms",
        "from 1 to 86400000",
    ),
    (&["DLOCK.ACQUIRE", "k", "o", "-5"], "ERR ttl-ms", "got '-5'"),
    (
        &["DLOCK.ACQUIRE", "k", "o", "86400001"],
        "ERR ttl-ms",
        "dlock.max-ttl-ms",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "1.5"],
        "ERR ttl-ms",
        "got '1.5'",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "99999999999999999999999"],
        "ERR ttl-ms",
        "from 1 to",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "", "1000"],
        "ERR owner must be 1 to 256 bytes",
        "got 0 bytes",
    ),
    (
        &["DLOCK.ACQUIRE", "k", "o", "1000", "FOO"],
        "ERR unknown option 'FOO'",
        "REENTRANT",
    ),
    (
        &["DLOCK.RELEASE", "k"],
        "ERR wrong number of arguments for 'dlock.release' command",
        "",
    ),
    (
        &["DLOCK.RELEASE", "k", ""],
        "ERR owner must be 1 to 256 bytes",
        "got 0",
    ),
    (
        &["DLOCK.EXTEND", "k", "o"],
        "ERR wrong number of arguments for 'dlock.extend' command",
        "",
    ),
    (&["DLOCK.EXTEND", "k", "o", "0"], "ERR ttl-ms", "from 1 to"),
    (&["DLOCK.EXTEND", "k", "o", "x"], "ERR ttl-ms", "got 'x'"),
    (
        &["DLOCK.FENCE", "k", "o"],
        "ERR wrong number of arguments for 'dlock.fence' command",
        "",
    ),
    (
        &["DLOCK.FENCE", "k", "o", "0"],
        "ERR token must be an integer from 1 to 9223372036854775807",
        "got '0'",
    ),
    (&["DLOCK.FENCE", "k", "o", "-1"], "ERR token", "got '-1'"),
    (&["DLOCK.FENCE", "k", "o", "t"], "ERR token", "got 't'"),
    (
        &["DLOCK.STATUS"],
        "ERR wrong number of arguments for 'dlock.status' command",
        "",
    ),
    (
        &["DLOCK.STATUS", "a", "b"],
        "ERR wrong number of arguments for 'dlock.status' command",
        "",
    ),
    (
        &["DLOCK.FORCERELEASE"],
        "ERR wrong number of arguments for 'dlock.forcerelease' command",
        "",
    ),
    (
        &["DLOCK.COUNTER", "x"],
        "ERR wrong number of arguments for 'dlock.counter' command",
        "",
    ),
    (&["DLOCK.RAISE", "0"], "ERR token", "from 1 to"),
    (
        &["DLOCK.APPLY", "k", "o", "5"],
        "ERR wrong number of arguments for 'dlock.apply' command",
        "",
    ),
    (
        &["DLOCK.APPLY", "k", "o", "5", "0"],
        "ERR holds must be an integer from 1 to 65535",
        "got '0'",
    ),
    (
        &["DLOCK.APPLY", "k", "o", "5", "1", "PX", "9"],
        "ERR unknown option 'PX'",
        "PXAT",
    ),
    (
        &["DLOCK.APPLY", "k", "o", "5", "1", "PXAT"],
        "ERR option PXAT needs a value",
        "",
    ),
    (
        &["DLOCK.FENCE", "k", "holder", "9223372036854775807"],
        "ERR token 9223372036854775807 is beyond what this node accepts",
        "one year",
    ),
    (
        &["DLOCK.FENCE", "k", "holder", "7"],
        "ERR token 7 is below the lock's token",
        "FENCE never lowers a token",
    ),
    (
        &["DLOCK.RAISE", "9223372036854775807"],
        "ERR token 9223372036854775807 is beyond what this node accepts",
        "",
    ),
    (
        &["DLOCK.RAISE", "18446744073709551615"],
        "ERR token must be an integer from 1 to 9223372036854775807",
        "",
    ),
    (
        &["DLOCK.APPLY", "k2", "o", "9223372036854775807", "1"],
        "ERR token 9223372036854775807 is beyond what this node accepts",
        "",
    ),
    (
        &["DLOCK.APPLY", "k", "o", "5", "1", "PXAT", "-1"],
        "ERR PXAT must be a unix time",
        "got '-1'",
    ),
];

#[test]
fn each_bad_input_gets_its_error_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "k", "holder", 60_000).unwrap();
    let before = (status(&mut c, "k"), counter(&mut c));
    let internal = effects_are_internal(&mut c);
    for (args, prefix, fragment) in CASES {
        let error = error_of(&mut c, args);
        if internal && ["DLOCK.APPLY", "DLOCK.RAISE"].contains(&args[0]) {
            assert!(
                error.starts_with("ERR unknown command"),
                "{args:?}: {error}"
            );
            continue;
        }
        assert!(error.starts_with(prefix), "{args:?}: {error}");
        assert!(
            error.contains(fragment),
            "{args:?}: {error} lacks {fragment}"
        );
        let (after_status, after_counter) = (status(&mut c, "k"), counter(&mut c));
        assert_eq!(
            after_status.as_ref().map(|s| (&s.0, s.1, s.3)),
            before.0.as_ref().map(|s| (&s.0, s.1, s.3)),
            "{args:?} changed the lock"
        );
        assert_eq!(after_counter, before.1, "{args:?} changed the counter");
    }
    let keys: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(keys, 1, "no key was created by bad input");
    assert_eq!(status(&mut c, "k").unwrap().1, token);
}

#[test]
fn oversized_owner_is_refused_and_the_largest_allowed_works() {
    let server = Server::start();
    let mut c = server.conn();
    let too_long = "o".repeat(257);
    let error = error_of(&mut c, &["DLOCK.ACQUIRE", "k", &too_long, "1000"]);
    assert!(
        error.starts_with("ERR owner must be 1 to 256 bytes, got 257 bytes"),
        "{error}"
    );
    assert_eq!(status(&mut c, "k"), None);
    let longest = "o".repeat(256);
    assert!(acquire(&mut c, "k", &longest, 1_000).is_some());
    assert_eq!(status(&mut c, "k").unwrap().0, longest);
}

#[test]
fn binary_owners_are_compared_byte_for_byte() {
    let server = Server::start();
    let mut c = server.conn();
    let owner: &[u8] = b"\x00\xffbin\r\n";
    let token: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
        .arg("k")
        .arg(owner)
        .arg(1000)
        .query(&mut c)
        .unwrap();
    assert!(token.is_some());
    let other: &[u8] = b"\x00\xffbin\r";
    let released: i64 = redis::cmd("DLOCK.RELEASE")
        .arg("k")
        .arg(other)
        .query(&mut c)
        .unwrap();
    assert_eq!(released, 0);
    let released: i64 = redis::cmd("DLOCK.RELEASE")
        .arg("k")
        .arg(owner)
        .query(&mut c)
        .unwrap();
    assert_eq!(released, 1);
}

#[test]
fn every_keyed_command_on_a_key_of_another_type_is_wrongtype() {
    let server = Server::start();
    let mut c = server.conn();
    redis::cmd("SET")
        .arg("s")
        .arg("value")
        .exec(&mut c)
        .unwrap();
    for args in [
        &["DLOCK.ACQUIRE", "s", "o", "1000"][..],
        &["DLOCK.RELEASE", "s", "o"],
        &["DLOCK.EXTEND", "s", "o", "1000"],
        &["DLOCK.FENCE", "s", "o", "5"],
        &["DLOCK.STATUS", "s"],
        &["DLOCK.FORCERELEASE", "s"],
        &["DLOCK.APPLY", "s", "o", "5", "1"],
    ] {
        if args[0] == "DLOCK.APPLY" && effects_are_internal(&mut c) {
            continue;
        }
        let error = error_of(&mut c, args);
        assert!(error.starts_with("WRONGTYPE"), "{args:?}: {error}");
    }
    let value: String = redis::cmd("GET").arg("s").query(&mut c).unwrap();
    assert_eq!(value, "value", "the string is untouched");
}

#[test]
fn reentrant_hold_limit_is_an_error_not_an_overflow() {
    let server = Server::start();
    let mut c = server.conn();
    let mut holds = redis::pipe();
    for _ in 0..65_535 {
        holds
            .cmd("DLOCK.ACQUIRE")
            .arg(&["k", "o", "60000", "REENTRANT"])
            .ignore();
    }
    holds.exec(&mut c).unwrap();
    let error = error_of(&mut c, &["DLOCK.ACQUIRE", "k", "o", "1000", "REENTRANT"]);
    assert!(
        error.starts_with("ERR reentrant hold count is already at its maximum of 65535"),
        "{error}"
    );
    assert_eq!(status(&mut c, "k").unwrap().3, 65535);
}

#[test]
fn random_garbage_never_takes_the_server_down() {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    let server = Server::start();
    let mut c = server.conn();
    let seed = RandomState::new();
    let words: [&[u8]; 12] = [
        b"k",
        b"o",
        b"",
        b"0",
        b"-1",
        b"1000",
        b"REENTRANT",
        b"PXAT",
        b"9223372036854775807",
        b"18446744073709551616",
        b"\x00\xff",
        b"nan",
    ];
    let commands = [
        "DLOCK.ACQUIRE",
        "DLOCK.RELEASE",
        "DLOCK.EXTEND",
        "DLOCK.FENCE",
        "DLOCK.STATUS",
        "DLOCK.FORCERELEASE",
        "DLOCK.COUNTER",
        "DLOCK.RAISE",
        "DLOCK.APPLY",
    ];
    for i in 0u64..3_000 {
        let r = seed.hash_one(i);
        let mut cmd = redis::cmd(commands[(r % 9) as usize]);
        for j in 0..((r >> 8) % 8) {
            cmd.arg(words[((r >> (12 + 4 * j)) % 12) as usize]);
        }
        let _ = cmd.query::<Value>(&mut c); // errors are fine; a crash is not
    }
    let pong: String = redis::cmd("PING").query(&mut c).expect("server alive");
    assert_eq!(pong, "PONG");
    server.assert_no_crash(); // nothing reached the panic hook either
}
