//! Guarded writes: `DLOCK.GUARD gate token command ...` lets a write through only for a token
//! at least its gate's, and nothing changes otherwise; the gate survives reloads, AOF replays
//! and replicas, never moves backwards, and the wrapped command runs under the caller's ACL.

use crate::common::dump::{dump, restore};
use crate::common::*;

/// `DLOCK.GUARD gate token args...`: the reply, or the error's text.
fn guard(c: &mut Connection, gate: &str, token: u64, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd("DLOCK.GUARD");
    cmd.arg(gate).arg(token);
    for a in args {
        cmd.arg(*a);
    }
    cmd.query::<Value>(c).map_err(|e| {
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
            .trim()
            .to_string()
    })
}

fn get(c: &mut Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(c).unwrap()
}

fn check(c: &mut Connection, gate: &str, token: u64) -> bool {
    let current: i64 = redis::cmd("DLOCK.CHECK")
        .arg(gate)
        .arg(token)
        .query(c)
        .unwrap();
    current == 1
}

#[test]
fn a_lower_token_is_stale_and_changes_nothing_an_equal_or_higher_one_writes() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(check(&mut c, "gate", 1), "no gate yet: any token");
    assert_eq!(
        guard(&mut c, "gate", 100, &["SET", "data", "a"]),
        Ok(Value::Okay)
    );
    let stale = guard(&mut c, "gate", 99, &["SET", "data", "b"]).unwrap_err();
    assert!(
        stale.starts_with("STALE token 99 is below the gate's 100"),
        "{stale}"
    );
    assert_eq!(
        get(&mut c, "data").as_deref(),
        Some("a"),
        "the stale write changed nothing"
    );
    assert_eq!(
        guard(&mut c, "gate", 100, &["APPEND", "data", "c"]),
        Ok(Value::Int(2))
    );
    assert_eq!(
        guard(&mut c, "gate", 150, &["SET", "data", "d"]),
        Ok(Value::Okay)
    );
    assert!(!check(&mut c, "gate", 149) && check(&mut c, "gate", 150));
    assert_eq!(get(&mut c, "data").as_deref(), Some("d"));
    let type_: String = redis::cmd("TYPE").arg("gate").query(&mut c).unwrap();
    assert_eq!(type_, "dlockgate");
    // A failed command does not raise the gate.
    let wrong = guard(&mut c, "gate", 200, &["INCR", "data"]).unwrap_err();
    assert!(wrong.starts_with("ERR"), "{wrong}");
    assert!(check(&mut c, "gate", 150), "still at 150");
    // A token far beyond the node's clock would carry the fencing counter with it: refused
    // before the command runs.
    let far = guard(&mut c, "gate", 1 << 62, &["SET", "data", "e"]).unwrap_err();
    assert!(far.contains("beyond what this node accepts"), "{far}");
    assert_eq!(get(&mut c, "data").as_deref(), Some("d"));
    assert!(!check(&mut c, "gate", 149) && check(&mut c, "gate", 150));
}

#[test]
fn what_may_not_be_wrapped_is_refused_before_anything_changes() {
    let server = Server::start();
    let mut c = server.conn();
    guard(&mut c, "gate", 10, &["SET", "data", "a"]).unwrap();
    let refused: &[(&[&str], &str)] = &[
        (&["BLPOP", "list", "0"], "BLPOP"),
        (&["CONFIG", "SET", "maxmemory", "1"], "CONFIG"),
        (&["DLOCK.ACQUIRE", "k", "o", "1000"], "a dlock command"),
        (&["EVAL", "return 1", "0"], "EVAL"),
        (&["MULTI"], "MULTI"),
        (&["SUBSCRIBE", "ch"], "SUBSCRIBE"),
        (&["DEL", "gate"], "its own gate"),
        (&["NOSUCHCOMMAND", "x"], "no such command"),
    ];
    for (args, said) in refused {
        let err = guard(&mut c, "gate", 20, args).unwrap_err();
        assert!(
            err.starts_with("ERR DLOCK.GUARD cannot run") && err.contains(said),
            "{args:?}: {err}"
        );
    }
    let token0 = error_of(&mut c, &["DLOCK.GUARD", "gate", "0", "SET", "data", "x"]);
    assert!(token0.starts_with("ERR token must be"), "{token0}");
    let arity = error_of(&mut c, &["DLOCK.GUARD", "gate", "20"]);
    assert!(arity.contains("wrong number of arguments"), "{arity}");
    let other_type = error_of(&mut c, &["DLOCK.GUARD", "data", "20", "SET", "x", "y"]);
    assert!(other_type.starts_with("WRONGTYPE"), "{other_type}");
    assert!(
        check(&mut c, "gate", 10) && !check(&mut c, "gate", 9),
        "the gate did not move"
    );
    assert_eq!(get(&mut c, "data").as_deref(), Some("a"));
}

#[test]
fn the_gate_and_the_command_keys_are_the_command_keys_for_getkeys_and_acl() {
    let server = Server::start();
    let mut c = server.conn();
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg("GETKEYS")
        .arg("DLOCK.GUARD")
        .arg("gate")
        .arg(5)
        .arg("MSET")
        .arg("a")
        .arg("1")
        .arg("b")
        .arg("2")
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["gate", "a", "b"]);
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("on")
        .arg(">pw")
        .arg("~gate")
        .arg("~app:*")
        .arg("+dlock.guard")
        .arg("+set")
        .exec(&mut c)
        .unwrap();
    let mut app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}", server.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(
        guard(&mut app, "gate", 5, &["SET", "app:1", "v"]),
        Ok(Value::Okay)
    );
    let key = guard(&mut app, "gate", 6, &["SET", "other", "v"]).unwrap_err();
    assert!(
        key.starts_with("NOPERM"),
        "a key outside the user's patterns: {key}"
    );
    let command = guard(&mut app, "gate", 6, &["DEL", "app:1"]).unwrap_err();
    assert!(
        command.contains("acl") || command.starts_with("NOPERM"),
        "a command the user may not run: {command}"
    );
    assert_eq!(get(&mut c, "app:1").as_deref(), Some("v"));
    assert!(check(&mut c, "gate", 5) && !check(&mut c, "gate", 4));
}

#[test]
fn guards_work_inside_multi_and_scripts() {
    let server = Server::start();
    let mut c = server.conn();
    let replies: (Value, Value) = redis::pipe()
        .atomic()
        .cmd("DLOCK.GUARD")
        .arg("gate")
        .arg(7)
        .arg("SET")
        .arg("a")
        .arg("1")
        .cmd("DLOCK.GUARD")
        .arg("gate")
        .arg(6)
        .arg("SET")
        .arg("a")
        .arg("2")
        .query(&mut c)
        .unwrap_or((Value::Nil, Value::Nil));
    let _ = replies; // EXEC returns the STALE error in place; the state says what happened
    assert_eq!(get(&mut c, "a").as_deref(), Some("1"));
    let script = "return redis.call('DLOCK.GUARD', KEYS[1], ARGV[1], 'SET', KEYS[2], ARGV[2])";
    let ok: Value = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("gate")
        .arg("b")
        .arg(8)
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(ok, Value::Okay);
    let stale = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("gate")
        .arg("b")
        .arg(1)
        .arg("y")
        .query::<Value>(&mut c);
    assert!(stale.is_err());
    assert_eq!(get(&mut c, "b").as_deref(), Some("x"));
}

#[test]
fn the_gate_survives_reload_aof_replay_and_reaches_a_replica() {
    // restart() is a kill -9: every write must be on disk before it returns (not within 1 s).
    let mut server = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("enable-debug-command", "yes")
        .start();
    let debug = Server::builder().config("enable-debug-command", "yes");
    let replica = replica_built(&server, debug);
    let mut c = server.conn();
    guard(&mut c, "gate", 500, &["SET", "data", "v"]).unwrap();
    sync(&mut c);
    let mut r = replica.conn();
    assert!(
        check(&mut r, "gate", 500) && !check(&mut r, "gate", 499),
        "the replica's gate"
    );
    assert_eq!(get(&mut r, "data").as_deref(), Some("v"));
    let digest = |c: &mut Connection| -> String {
        redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg("gate")
            .query::<Vec<String>>(c)
            .unwrap()[0]
            .clone()
    };
    assert_eq!(digest(&mut c), digest(&mut r), "master and replica alike");
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    assert!(!check(&mut c, "gate", 499), "after DEBUG RELOAD");
    redis::cmd("BGREWRITEAOF").exec(&mut c).unwrap();
    eventually("the AOF rewritten", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
    guard(&mut c, "gate", 600, &["SET", "data", "w"]).unwrap();
    server.restart();
    let mut c = server.conn();
    assert!(
        !check(&mut c, "gate", 599) && check(&mut c, "gate", 600),
        "after the AOF replay"
    );
    assert_eq!(get(&mut c, "data").as_deref(), Some("w"));
}

#[test]
fn restore_rename_and_set_never_move_a_gate_backwards_and_del_resets_it() {
    let server = Server::start();
    let mut c = server.conn();
    guard(&mut c, "gate", 100, &["SET", "data", "a"]).unwrap();
    let old = dump(&mut c, "gate");
    guard(&mut c, "gate", 900, &["SET", "data", "b"]).unwrap();
    assert!(
        restore(&mut c, "gate", &old).is_none(),
        "RESTORE ... REPLACE of the old gate"
    );
    assert!(
        !check(&mut c, "gate", 100),
        "floored at the node's counter, not back at 100"
    );
    guard(&mut c, "low", 50, &["SET", "x", "1"]).unwrap();
    guard(&mut c, "high", 950, &["SET", "y", "1"]).unwrap();
    redis::cmd("RENAME")
        .arg("low")
        .arg("high")
        .exec(&mut c)
        .unwrap();
    assert!(
        !check(&mut c, "high", 949),
        "a lower gate renamed over a higher one stands as high"
    );
    redis::cmd("SET").arg("gate").arg("x").exec(&mut c).unwrap();
    let broken = guard(&mut c, "gate", 10_000, &["SET", "data", "c"]).unwrap_err();
    assert!(broken.starts_with("WRONGTYPE"), "{broken}");
    let copy = error_of(&mut c, &["COPY", "high", "copied"]);
    assert!(copy.starts_with("ERR"), "COPY of a gate: {copy}");
    redis::cmd("DEL").arg("gate").exec(&mut c).unwrap();
    assert!(check(&mut c, "gate", 1), "DEL is the reset");
}

/// A RESP3 client gets the wrapped command's reply in RESP3: a map for HGETALL, `_` for a nil
/// (before, RESP2's forms reached it, `$-1` on which redis-py's RESP3 parser hangs).
#[test]
fn the_wrapped_reply_is_in_the_callers_protocol() {
    use std::io::{Read, Write};
    let server = Server::start();
    let mut c = server.conn();
    let _: () = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query(&mut c)
        .unwrap();
    let resp3 = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let mut r3 = resp3.get_connection().unwrap();
    match guard(&mut r3, "gate", 5, &["HGETALL", "h"]).unwrap() {
        Value::Map(pairs) => assert_eq!(pairs.len(), 1),
        other => panic!("expected a RESP3 map, got {other:?}"),
    }
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let hello = b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    let nil =
        b"*5\r\n$11\r\nDLOCK.GUARD\r\n$4\r\ngate\r\n$1\r\n5\r\n$3\r\nGET\r\n$7\r\nmissing\r\n";
    raw.write_all(hello).unwrap();
    raw.write_all(nil).unwrap();
    raw.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"+PONG\r\n") {
        let n = raw.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "connection closed: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.ends_with(b"_\r\n+PONG\r\n"),
        "a RESP3 nil expected: {}",
        String::from_utf8_lossy(&got)
    );
}
