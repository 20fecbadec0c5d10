//! A gate held to the hardening standard: no client can crash the server through a GUARD's key
//! extraction, and no server operation lowers a gate — RESTORE raises the counter with it, a
//! moved gate stands where it stood for every reader (an AOF rewrite and RAISEGATE included), an
//! expired or evicted gate comes back, and a new gate is refused over `maxmemory`.

use crate::common::dump::{dump, restore};
use crate::common::*;

fn guard(c: &mut Connection, gate: &str, token: u64, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd("DLOCK.GUARD");
    cmd.arg(gate).arg(token).arg(args);
    cmd.query::<Value>(c).map_err(|e| {
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
            .trim()
            .to_string()
    })
}

/// A token this node would issue about a minute from now (tokens follow the clock in µs).
fn ahead_of_the_clock(seconds: u64) -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_micros() as u64) + seconds * 1_000_000
}

fn nested_guards(levels: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("GETKEYS");
    for _ in 0..levels {
        cmd.arg("DLOCK.GUARD").arg("g").arg(1);
    }
    cmd.arg("SET").arg("z").arg("z");
    cmd
}

/// Asking the keys of GUARDs nested thousands deep recursed once per level into the module
/// until the stack overflowed: any client could kill the server (`COMMAND GETKEYS`, and every
/// ACL key check and Cluster routing asks the same).
#[test]
fn nested_guards_cannot_crash_key_extraction() {
    let server = Server::start();
    let mut c = server.conn();
    let keys = nested_guards(1).query::<Vec<String>>(&mut c);
    assert_eq!(keys.ok(), Some(vec!["g".to_string(), "z".to_string()]));
    for levels in [2, 3_000, 100_000] {
        // The inner GUARD is refused when it runs: its keys are not asked.
        let keys = nested_guards(levels).query::<Vec<String>>(&mut c);
        assert_eq!(keys.ok(), Some(vec!["g".to_string()]), "{levels} levels");
    }
    redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "app",
            "on",
            ">pw",
            "~g",
            "~app:*",
            "+dlock.guard",
            "+set",
        ])
        .exec(&mut c)
        .unwrap();
    let url = format!("redis://app:pw@127.0.0.1:{}", server.port());
    let mut app = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut deep = redis::cmd("DLOCK.GUARD");
    for _ in 0..50_000 {
        deep.arg("g").arg(1).arg("DLOCK.GUARD");
    }
    deep.arg("g").arg(1).arg("SET").arg("app:1").arg("v");
    let refused = deep.query::<Value>(&mut app).unwrap_err();
    assert!(refused.to_string().contains("dlock command"), "{refused}");
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    server.assert_no_crash();
}

/// A RESTOREd gate raises the node counter: the node's own next grant passes it (before, the
/// counter stayed 0 and that grant was STALE), and a RESTORE ... REPLACE of an older DUMP cannot
/// lower it. A replica's counter follows its master's.
#[test]
fn a_restored_gate_raises_the_counter_and_an_older_dump_cannot_lower_it() {
    let (source, target) = (Server::start(), Server::start());
    let (mut s, mut t) = (source.conn(), target.conn());
    let ahead = ahead_of_the_clock(60);
    guard(&mut s, "g", ahead - 1_000, &["SET", "x", "1"]).unwrap();
    let older = dump(&mut s, "g");
    guard(&mut s, "g", ahead, &["SET", "x", "2"]).unwrap();
    let newer = dump(&mut s, "g");
    let replica = replica_of(&target);
    assert!(restore(&mut t, "g", &newer).is_none());
    assert!(
        counter(&mut t) >= ahead as i64,
        "the counter rose with the gate"
    );
    let token = acquire(&mut t, "lock", "me", 10_000).expect("granted");
    assert!(token > ahead as i64, "the next grant is above the gate");
    assert_eq!(
        guard(&mut t, "g", token as u64, &["SET", "x", "3"]),
        Ok(Value::Okay)
    );
    assert!(
        restore(&mut t, "g", &older).is_none(),
        "REPLACE of the older DUMP"
    );
    assert!(gate_token(&mut t, "g") >= token as u64, "never lowered");
    sync(&mut t);
    let mut r = replica.conn();
    assert_eq!(counter(&mut r), counter(&mut t), "the replica's counter");
    assert_eq!(gate_token(&mut r, "g"), gate_token(&mut t, "g"));
}

/// A gate moved by RENAME stands where it stood when it moved, for every reader: CHECK, an AOF
/// rewrite replayed (plain AOF, no RDB preamble), a replica. Before, it floated with the counter
/// for CHECK and GUARD but was written back at its raw token by the rewrite: a token refused
/// before `BGREWRITEAOF` + `DEBUG LOADAOF` passed after.
#[test]
fn a_renamed_gate_stands_alike_for_every_reader_and_after_an_aof_rewrite() {
    let server = Server::builder()
        .config("appendonly", "yes")
        .config("aof-use-rdb-preamble", "no")
        .config("enable-debug-command", "yes")
        .start();
    let replica = replica_of(&server);
    let mut c = server.conn();
    let granted = acquire(&mut c, "elsewhere", "o", 10_000).expect("granted") as u64;
    guard(&mut c, "ga", 100, &["SET", "x", "1"]).unwrap();
    redis::cmd("RENAME")
        .arg("ga")
        .arg("gb")
        .exec(&mut c)
        .unwrap();
    let moved_at = gate_token(&mut c, "gb");
    assert!(moved_at >= granted, "floored at the counter when it moved");
    let later = acquire(&mut c, "later", "o", 10_000).expect("granted") as u64;
    assert!(later > moved_at);
    assert_eq!(
        gate_token(&mut c, "gb"),
        moved_at,
        "a later grant does not move it"
    );
    let raised: Result<Value, _> = redis::cmd("DLOCK.RAISEGATE")
        .arg("gb")
        .arg(150)
        .query(&mut c);
    if raised.is_ok() {
        assert_eq!(
            gate_token(&mut c, "gb"),
            moved_at,
            "RAISEGATE reads the floor"
        );
    }
    sync(&mut c);
    assert_eq!(
        gate_token(&mut replica.conn(), "gb"),
        moved_at,
        "the replica"
    );
    redis::cmd("BGREWRITEAOF").exec(&mut c).unwrap();
    eventually("the AOF rewritten", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
    redis::cmd("DEBUG").arg("LOADAOF").exec(&mut c).unwrap();
    assert_eq!(
        gate_token(&mut c, "gb"),
        moved_at,
        "after the rewrite's replay"
    );
    assert!(!check_gate(&mut c, "gb", moved_at - 1) && check_gate(&mut c, "gb", later));
}

/// `PEXPIRE gate 100` was accepted and the gate vanished: token 1 then wrote. A gate never keeps
/// a TTL — EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, a RESTORE with a TTL, inside MULTI too — so it
/// never expires: not when read in the same pipeline, not across a save and a restart after its
/// TTL would have passed, not on its replica. DEL stays the reset (and so does an EXPIRE whose
/// time has already passed when Redis looks, as Redis deletes the key then).
#[test]
fn a_gate_never_keeps_a_ttl_and_del_still_resets_it() {
    let mut server = Server::builder()
        .config("enable-debug-command", "yes")
        .config("save", "")
        .start();
    let replica = replica_of(&server);
    let mut c = server.conn();
    guard(&mut c, "g", 500, &["SET", "x", "1"]).unwrap();
    if !gates_watched(&mut c) {
        redis::cmd("PEXPIRE")
            .arg(&["g", "60000"])
            .exec(&mut c)
            .unwrap();
        assert!(
            pttl(&mut c, "g") > 0,
            "Valkey 8: the TTL stays, as documented"
        );
        return;
    }
    let soon = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 100)
        .to_string();
    let setters: [&[&str]; 5] = [
        &["PEXPIRE", "g", "100"],
        &["EXPIRE", "g", "1"],
        &["PEXPIREAT", "g", &soon],
        &["EXPIREAT", "g", "4000000000"],
        &["PEXPIRE", "g", "50", "NX"],
    ];
    for args in setters {
        let ttl: (Value, i64) = redis::pipe()
            .cmd(args[0])
            .arg(&args[1..])
            .cmd("PTTL")
            .arg("g")
            .query(&mut c)
            .unwrap();
        assert_eq!(
            ttl.1, -1,
            "{args:?}: the TTL was taken off within the command"
        );
    }
    redis::pipe()
        .atomic()
        .cmd("PEXPIRE")
        .arg(&["g", "50"])
        .cmd("SET")
        .arg(&["other", "v"])
        .exec(&mut c)
        .unwrap();
    assert_eq!(pttl(&mut c, "g"), -1, "after a MULTI");
    // A TTL set, then the gate moved in the same transaction or script: none on the new key
    // (taken off where it was set, not after the transaction, when the gate is elsewhere).
    redis::pipe()
        .atomic()
        .cmd("EXPIRE")
        .arg(&["g", "2"])
        .cmd("RENAME")
        .arg(&["g", "h"])
        .exec(&mut c)
        .unwrap();
    assert_eq!(pttl(&mut c, "h"), -1, "renamed in the MULTI that set a TTL");
    let script =
        "redis.call('PEXPIRE', KEYS[1], 5000); return redis.call('RENAME', KEYS[1], KEYS[2])";
    redis::cmd("EVAL")
        .arg(&[script, "2", "h", "g"])
        .exec(&mut c)
        .unwrap();
    assert_eq!(
        pttl(&mut c, "g"),
        -1,
        "renamed by the script that set a TTL"
    );
    redis::cmd("DEBUG")
        .arg(&["SET-ACTIVE-EXPIRE", "0"])
        .exec(&mut c)
        .unwrap();
    // Not PEXPIRE 1: a TTL already past when Redis checks it (1 ms of load) deletes the key,
    // as EXPIRE with a time in the past does: the reset.
    for _ in 0..100 {
        redis::cmd("PEXPIRE")
            .arg(&["g", "20"])
            .exec(&mut c)
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(25));
        let (exists, stale): (i64, Result<Value, redis::RedisError>) = redis::pipe()
            .cmd("EXISTS")
            .arg("g")
            .cmd("DLOCK.GUARD")
            .arg(&["g", "1", "SET", "x", "stale"])
            .query::<(i64, Value)>(&mut c)
            .map(|(e, v)| (e, Ok(v)))
            .unwrap_or_else(|e| (1, Err(e)));
        assert_eq!(exists, 1, "the gate is there");
        assert!(stale.is_err(), "a stale write passed: {stale:?}");
    }
    let payload = dump(&mut c, "g");
    redis::cmd("RESTORE")
        .arg("g2")
        .arg(50)
        .arg(payload.as_slice())
        .exec(&mut c)
        .unwrap();
    assert_eq!(pttl(&mut c, "g2"), -1, "a RESTORE with a TTL");
    redis::cmd("PEXPIRE")
        .arg(&["g", "200"])
        .exec(&mut c)
        .unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap();
    sync(&mut c);
    let mut r = replica.conn();
    assert_eq!(
        (gate_token(&mut r, "g"), pttl(&mut r, "g")),
        (500, -1),
        "the replica"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.restart();
    let mut c = server.conn();
    assert_eq!(
        gate_token(&mut c, "g"),
        500,
        "saved without a TTL, loaded after it would have passed"
    );
    redis::cmd("DEL").arg("g").exec(&mut c).unwrap();
    assert!(check_gate(&mut c, "g", 1), "DEL is the reset");
    server.assert_no_crash();
}

/// Under an `allkeys-*` policy a gate is never evicted for good: an evicted one comes back.
#[test]
fn an_evicted_gate_comes_back() {
    let server = Server::start();
    let mut c = server.conn();
    if !gates_watched(&mut c) {
        eprintln!("skipped: Valkey 8 brings no evicted gate back (docs/compatibility.md)");
        return;
    }
    for i in 0..20 {
        guard(&mut c, &format!("g{i}"), 1_000 + i, &["SET", "x", "1"]).unwrap();
    }
    let used: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    let used: u64 = used
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    let limit = (used + 2_000_000).to_string();
    redis::cmd("CONFIG")
        .arg(&[
            "SET",
            "maxmemory",
            &limit,
            "maxmemory-policy",
            "allkeys-random",
        ])
        .exec(&mut c)
        .unwrap();
    let blob = "x".repeat(10_000);
    for i in 0..1_000 {
        redis::cmd("SET")
            .arg(format!("fill:{i}"))
            .arg(&blob)
            .exec(&mut c)
            .unwrap();
    }
    let evicted: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(!evicted.contains("evicted_keys:0\r"), "keys were evicted");
    redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .exec(&mut c)
        .unwrap();
    for i in 0..20 {
        let gate = format!("g{i}");
        eventually(&format!("{gate} back"), 5_000, || {
            gate_token(&mut c, &gate) == 1_000 + i
        });
    }
}

/// 20,000 new gates grew memory 2.5x past a `noeviction` limit that SET respected: a new gate
/// is refused over `maxmemory`, a raised one is not, and a guarded DEL still frees memory. A
/// replica applies its master's gates whatever its own memory.
#[test]
fn a_new_gate_is_refused_over_maxmemory() {
    let server = Server::start();
    // Redis's default replica-ignore-maxmemory: a replica applies its master's writes (with
    // `no`, Redis itself refuses the master's SET as well).
    let starved = Server::builder()
        .config("maxmemory", "1")
        .config("maxmemory-policy", "noeviction");
    let replica = replica_built(&server, starved);
    let mut c = server.conn();
    guard(&mut c, "old", 10, &["SET", "data", "v"]).unwrap();
    redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", "noeviction", "maxmemory", "1"])
        .exec(&mut c)
        .unwrap();
    let refused = guard(&mut c, "new", 10, &["DEL", "nothing"]).unwrap_err();
    assert!(refused.starts_with("OOM"), "{refused}");
    assert!(check_gate(&mut c, "new", 1), "no gate was made");
    let set = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .exec(&mut c)
        .unwrap_err();
    assert_eq!(set.code(), Some("OOM"), "as a SET is refused");
    assert_eq!(
        guard(&mut c, "old", 20, &["DEL", "data"]),
        Ok(Value::Int(1))
    );
    assert!(
        !check_gate(&mut c, "old", 19),
        "a raised gate takes no memory"
    );
    redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .exec(&mut c)
        .unwrap();
    assert_eq!(
        guard(&mut c, "new", 10, &["SET", "x", "y"]),
        Ok(Value::Okay)
    );
    sync(&mut c);
    let mut r = replica.conn();
    assert!(
        !check_gate(&mut r, "new", 9),
        "the replica applied its master's new gate"
    );
}
