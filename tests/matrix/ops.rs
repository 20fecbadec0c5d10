//! The matrix's rows: one server operation each, applied to every kind of key ([`super::KINDS`]).
//! A row names the operation, how its master is configured, and the function that applies it
//! and says where the keys are after it; adding an operation is one line in [`rows!`].

use std::time::Duration;

use super::{After, Case, Checked, Kind, KINDS};
use crate::common::*;

macro_rules! rows {
    ($($name:ident: $config:expr => $op:expr;)*) => {$(
        #[test]
        fn $name() {
            let builder = $config.iter().fold(Server::builder(), |b, (k, v)| b.config(k, v));
            Case::start(builder).run($op);
        }
    )*};
}

const PLAIN: [(&str, &str); 0] = [];
const AOF_PLAIN: [(&str, &str); 2] = [("appendonly", "yes"), ("aof-use-rdb-preamble", "no")];
const AOF_PREAMBLE: [(&str, &str); 2] = [("appendonly", "yes"), ("aof-use-rdb-preamble", "yes")];
const AOF_ALWAYS: [(&str, &str); 2] = [("appendonly", "yes"), ("appendfsync", "always")];

rows! {
    rename: PLAIN => |case| each_to(case, |k| with_key(&["RENAME", "{}", "{}:renamed"], k), |k| Some((0, renamed(k))));
    rename_over_a_string: PLAIN => rename_over;
    move_to_another_db: PLAIN => |case| each_to(case, |k| with_key(&["MOVE", "{}", "1"], k), |k| Some((1, k.to_string())));
    copy_is_refused: PLAIN => copy;
    swapdb: PLAIN => |case| { run(case, &["SWAPDB", "0", "1"]); After::each(|k| Some((1, k.key().to_string()))) };
    restore_after_del: PLAIN => restore_fresh;
    restore_replace: PLAIN => |case| { restore_each(case, dump); After::in_place() };
    restore_an_older_dump: PLAIN => restore_older;
    restore_crafted_payloads: PLAIN => restore_crafted;
    migrate_to_another_server: PLAIN => migrate;
    pexpire: PLAIN => |case| { each(case, |k| with_key(&["PEXPIRE", "{}", "50"], k)); sleep(200); unwatched_gate_gone(case, After::answered_now()) };
    pexpireat_soon: PLAIN => pexpireat;
    expire_in_the_past_deletes: PLAIN => |case| { each(case, |k| with_key(&["EXPIRE", "{}", "-1"], k)); After::reset() };
    expire_longer: PLAIN => |case| { each(case, |k| with_key(&["PEXPIRE", "{}", "3600000"], k)); After::in_place() };
    persist: PLAIN => |case| { each(case, |k| with_key(&["PERSIST", "{}"], k)); After::in_place() };
    del: PLAIN => |case| { each(case, |k| with_key(&["DEL", "{}"], k)); After::reset() };
    unlink: PLAIN => |case| { each(case, |k| with_key(&["UNLINK", "{}"], k)); After::reset() };
    flushdb: PLAIN => |case| { run(case, &["FLUSHDB"]); After::reset() };
    flushdb_async: PLAIN => |case| { run(case, &["FLUSHDB", "ASYNC"]); After::reset() };
    flushall: PLAIN => |case| { run(case, &["FLUSHALL"]); After::reset() };
    flushall_async: PLAIN => |case| { run(case, &["FLUSHALL", "ASYNC"]); After::reset() };
    sort_store_overwrites: PLAIN => sort_store;
    object_subcommands: PLAIN => object;
    eviction_allkeys_random: PLAIN => eviction;
    debug_reload: PLAIN => |case| { run(case, &["DEBUG", "RELOAD"]); After::in_place() };
    aof_rewrite_plain_and_reload: AOF_PLAIN => aof_rewrite_and_reload;
    aof_rewrite_preamble_and_reload: AOF_PREAMBLE => aof_rewrite_and_reload;
    full_sync_to_a_new_replica: PLAIN => full_sync;
    replica_promotion: PLAIN => promotion;
    kill_and_restart_from_the_aof: AOF_ALWAYS => restart;
}

/// Where the module hears no keyspace notification (Valkey 8, docs/compatibility.md), a gate
/// that expired or was evicted stays gone: the row then expects it reset.
fn unwatched_gate_gone(case: &mut Case, mut after: After) -> After {
    if !gates_watched(&mut case.c) {
        for (kind, at) in &mut after.at {
            if *kind == Kind::Gate {
                *at = None;
            }
        }
    }
    after
}

fn renamed(key: &str) -> String {
    format!("{key}:renamed")
}

fn sleep(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

fn run(case: &mut Case, args: &[&str]) -> Value {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut case.c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The command `args(key)` for each kind's key.
fn each(case: &mut Case, args: impl Fn(&str) -> Vec<String>) {
    for kind in KINDS {
        let args = args(kind.key());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(case, &args);
    }
}

/// `words` with `{}` replaced by the key.
fn with_key(words: &[&str], key: &str) -> Vec<String> {
    words.iter().map(|w| w.replace("{}", key)).collect()
}

fn each_to(
    case: &mut Case,
    args: impl Fn(&str) -> Vec<String>,
    to: impl Fn(&str) -> Option<(i64, String)>,
) -> After {
    each(case, args);
    After::each(|k| to(k.key()))
}

fn dump(c: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(c).expect("DUMP")
}

fn restore_each(case: &mut Case, payload: impl Fn(&mut Connection, &str) -> Vec<u8>) {
    for kind in KINDS {
        let body = payload(&mut case.c, kind.key());
        let refused = crate::common::dump::restore(&mut case.c, kind.key(), &body);
        assert!(refused.is_none(), "RESTORE {kind:?}: {refused:?}");
    }
}

/// A string renamed over each key: an overwrite, the reset.
fn rename_over(case: &mut Case) -> After {
    for kind in KINDS {
        run(case, &["SET", "m:string", "v"]);
        run(case, &["RENAME", "m:string", kind.key()]);
    }
    After::reset()
}

fn copy(case: &mut Case) -> After {
    for kind in KINDS {
        let copied = redis::cmd("COPY")
            .arg(kind.key())
            .arg("m:copy")
            .query::<Value>(&mut case.c);
        assert!(copied.is_err(), "COPY of {kind:?}: {copied:?}");
    }
    After::in_place()
}

/// DEL then RESTORE of its own DUMP, in one transaction (the waiters see the value back).
fn restore_fresh(case: &mut Case) -> After {
    for kind in KINDS {
        let payload = dump(&mut case.c, kind.key());
        redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(kind.key())
            .cmd("RESTORE")
            .arg(kind.key())
            .arg(0)
            .arg(payload)
            .exec(&mut case.c)
            .expect("DEL + RESTORE");
    }
    After::in_place()
}

/// RESTORE ... REPLACE of a DUMP taken before the gate's last rise.
fn restore_older(case: &mut Case) -> After {
    for (kind, payload) in case.older.clone() {
        let refused = crate::common::dump::restore(&mut case.c, kind.key(), &payload);
        assert!(refused.is_none(), "RESTORE {kind:?}: {refused:?}");
    }
    After::in_place()
}

/// Every byte of each DUMP's body flipped in turn, the checksum made valid again: RESTOREd
/// over the gate itself (whatever is accepted must not lower it), and under other names for the
/// locks (a crafted lock may carry its own lease).
fn restore_crafted(case: &mut Case) -> After {
    for kind in KINDS {
        let payload = dump(&mut case.c, kind.key());
        for at in 1..payload.len() - 10 {
            let mut crafted = payload.clone();
            crafted[at] ^= 0x5a;
            let crafted = crate::common::dump::reseal(&crafted);
            let target = match kind {
                Kind::Gate => kind.key().to_string(),
                _ => format!("m:crafted:{at}"),
            };
            let _ = crate::common::dump::restore(&mut case.c, &target, &crafted);
        }
    }
    After::in_place()
}

fn migrate(case: &mut Case) -> After {
    let target = Server::start();
    let port = target.port().to_string();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    args.extend(KINDS.iter().map(|k| k.key()));
    run(case, &args);
    After {
        checked: Checked::Target(target),
        ..After::answered_now()
    }
}

fn pexpireat(case: &mut Case) -> After {
    let now: i64 = redis::cmd("TIME")
        .query::<(i64, i64)>(&mut case.c)
        .map(|(s, us)| s * 1_000 + us / 1_000)
        .expect("TIME");
    let at = (now + 50).to_string();
    each(case, |k| with_key(&["PEXPIREAT", "{}", &at], k));
    sleep(200);
    unwatched_gate_gone(case, After::answered_now())
}

/// SORT ... STORE writes a list over each key: an overwrite, the reset.
fn sort_store(case: &mut Case) -> After {
    run(case, &["RPUSH", "m:source", "3", "1", "2"]);
    each(case, |k| with_key(&["SORT", "m:source", "STORE", "{}"], k));
    After::reset()
}

fn object(case: &mut Case) -> After {
    for kind in KINDS {
        for sub in ["ENCODING", "REFCOUNT", "IDLETIME"] {
            run(case, &["OBJECT", sub, kind.key()]);
        }
    }
    After::in_place()
}

/// Memory filled past `maxmemory` under allkeys-random: any key may be evicted, a gate comes
/// back.
fn eviction(case: &mut Case) -> After {
    let info: String = redis::cmd("INFO").arg("memory").query(&mut case.c).unwrap();
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory");
    let limit = (used + 1_000_000).to_string();
    run(
        case,
        &[
            "CONFIG",
            "SET",
            "maxmemory-policy",
            "allkeys-random",
            "maxmemory",
            &limit,
        ],
    );
    let blob = "x".repeat(10_000);
    for i in 0..500 {
        let _ = redis::cmd("SET")
            .arg(format!("m:fill:{i}"))
            .arg(&blob)
            .exec(&mut case.c);
    }
    run(case, &["CONFIG", "SET", "maxmemory", "0"]);
    unwatched_gate_gone(case, After::in_place())
}

fn aof_rewrite_and_reload(case: &mut Case) -> After {
    run(case, &["BGREWRITEAOF"]);
    eventually("the AOF rewritten", 10_000, || {
        let info: String = redis::cmd("INFO")
            .arg("persistence")
            .query(&mut case.c)
            .unwrap();
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
    run(case, &["DEBUG", "LOADAOF"]);
    After::in_place()
}

/// A replica attached after the setup gets everything by a full sync.
fn full_sync(case: &mut Case) -> After {
    let debug = Server::builder().config("enable-debug-command", "yes");
    let late = replica_built(&case.master, debug);
    let mut r = late.conn();
    super::same_digest(&mut case.c, &mut r);
    assert_eq!(
        counter(&mut r),
        counter(&mut case.c),
        "the counter came with the sync"
    );
    After::in_place()
}

fn promotion(case: &mut Case) -> After {
    sync(&mut case.c);
    let replica = case.replica.as_ref().expect("a replica");
    redis::cmd("REPLICAOF")
        .arg(&["NO", "ONE"])
        .exec(&mut replica.conn())
        .expect("REPLICAOF NO ONE");
    After {
        checked: Checked::Replica,
        ..After::in_place()
    }
}

/// kill -9 and a restart from the AOF (every write fsynced): the waiters' connections close.
fn restart(case: &mut Case) -> After {
    case.master.restart();
    case.c = case.master.conn();
    After::answered_now()
}
