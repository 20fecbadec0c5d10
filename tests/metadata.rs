//! What Redis users expect of a module's commands: COMMAND DOCS and COMMAND INFO (arity, key
//! specs, summary, since, arguments), the `@dlock` ACL category (Redis 7.2+), internal effect
//! commands (Redis 8+), and keyspace events of the module class for every lock change.

use crate::common::*;

use std::collections::HashMap;
use std::time::Duration;

/// A RESP reply of alternating names and values as a map (values kept as replies).
fn fields(value: &Value) -> HashMap<String, Value> {
    let items = match value {
        Value::Array(items) => items.clone(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect(),
        other => panic!("not a map: {other:?}"),
    };
    items
        .chunks(2)
        .map(|kv| {
            (
                redis::from_redis_value_ref::<String>(&kv[0]).unwrap(),
                kv[1].clone(),
            )
        })
        .collect()
}

fn text(v: &Value) -> String {
    redis::from_redis_value_ref(v).unwrap()
}

fn module_commands(c: &mut Connection) -> Vec<String> {
    let mut names: Vec<String> = redis::cmd("COMMAND")
        .arg(&["LIST", "FILTERBY", "MODULE", "dlock"])
        .query(c)
        .unwrap();
    names.sort();
    names
}

/// The ACL categories COMMAND INFO reports for a command.
fn categories(c: &mut Connection, name: &str) -> Vec<String> {
    let info: Vec<Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(name)
        .query(c)
        .unwrap();
    let Value::Array(row) = &info[0] else {
        panic!("{name}: {info:?}")
    };
    redis::from_redis_value_ref(&row[6]).unwrap()
}

#[test]
fn command_docs_describe_every_command_the_reference_lists() {
    let server = Server::start();
    let mut c = server.conn();
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md")).unwrap();
    for name in module_commands(&mut c) {
        assert!(
            reference.contains(&format!("| `{}", name.to_ascii_uppercase())),
            "{name} missing from docs/commands.md"
        );
        let docs: Value = redis::cmd("COMMAND")
            .arg("DOCS")
            .arg(&name)
            .query(&mut c)
            .unwrap();
        let Value::Array(pair) = docs else {
            panic!("{docs:?}")
        };
        let doc = fields(&pair[1]);
        assert!(!text(&doc["summary"]).is_empty(), "{name}");
        assert_eq!(text(&doc["group"]), "module", "{name}");
        assert_eq!(text(&doc["module"]), "dlock", "{name}");
        assert!(text(&doc["since"]).starts_with("0."), "{name}");
    }
}

#[test]
fn dlock_acquire_docs_and_info() {
    let server = Server::start();
    let mut c = server.conn();
    let docs: Value = redis::cmd("COMMAND")
        .arg("DOCS")
        .arg("dlock.acquire")
        .query(&mut c)
        .unwrap();
    let Value::Array(pair) = docs else { panic!() };
    let doc = fields(&pair[1]);
    let Value::Array(args) = &doc["arguments"] else {
        panic!()
    };
    let names: Vec<(String, String)> = args
        .iter()
        .map(|a| {
            let a = fields(a);
            (text(&a["name"]), text(&a["type"]))
        })
        .collect();
    let expected = [
        ("key", "key"),
        ("owner", "string"),
        ("ttl-ms", "integer"),
        ("reentrant", "pure-token"),
        ("timeout-ms", "integer"),
        ("ticket", "integer"),
        ("shared", "pure-token"),
        ("limit", "integer"),
    ];
    assert_eq!(names, expected.map(|(n, t)| (n.to_string(), t.to_string())));

    let info: Vec<Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("dlock.acquire")
        .query(&mut c)
        .unwrap();
    let Value::Array(row) = &info[0] else {
        panic!()
    };
    assert_eq!(row[1], Value::Int(-4), "arity");
    let flags: Vec<String> = redis::from_redis_value_ref(&row[2]).unwrap();
    for flag in ["write", "denyoom", "fast", "blocking", "module"] {
        assert!(flags.contains(&flag.to_string()), "{flags:?}");
    }
    assert_eq!(
        row[3..6],
        [Value::Int(1), Value::Int(1), Value::Int(1)],
        "first, last key, step"
    );
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg(&["GETKEYS", "DLOCK.ACQUIRE", "orders:42", "me", "1000"])
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["orders:42"]);
}

#[test]
fn the_dlock_acl_category_on_servers_that_have_module_categories() {
    let server = Server::start();
    let mut c = server.conn();
    if dlock_testkit::server_version(&mut c) < (7, 2) {
        assert!(
            redis::cmd("ACL")
                .arg("CAT")
                .arg("dlock")
                .query::<Value>(&mut c)
                .is_err(),
            "7.0: no such category"
        );
        return;
    }
    // (COMMAND INFO rather than ACL CAT: Redis 7.4's ACL CAT lists no module command.)
    for name in module_commands(&mut c) {
        let app = [
            "dlock.acquire",
            "dlock.check",
            "dlock.counter",
            "dlock.extend",
            "dlock.fence",
            "dlock.guard",
            "dlock.observe",
            "dlock.proclaim",
            "dlock.release",
            "dlock.runid",
            "dlock.status",
            "dlock.waiters",
        ];
        let expected = if app.contains(&name.as_str()) {
            "@dlock"
        } else {
            "@dangerous"
        };
        assert!(
            categories(&mut c, &name).contains(&expected.to_string()),
            "{name}: {expected}"
        );
    }
    redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~lock:*", "-@all", "+@dlock"])
        .exec(&mut c)
        .unwrap();
    let mut app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", server.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    assert!(acquire(&mut app, "lock:1", "o", 1_000).is_some());
    for denied in [
        &["SET", "lock:1", "x"][..],
        &["DLOCK.FORCERELEASE", "lock:1"],
    ] {
        assert!(
            error_of(&mut app, denied).starts_with("NOPERM"),
            "{denied:?}"
        );
    }
}

#[test]
fn effect_commands_are_internal_on_redis_8_and_dangerous_elsewhere() {
    let server = Server::start();
    let mut c = server.conn();
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    let valkey = info.contains("valkey_version");
    let internal = dlock_testkit::server_version(&mut c) >= (8, 0) && !valkey;
    assert_eq!(effects_are_internal(&mut c), internal);
    let listed = module_commands(&mut c);
    let has_categories = dlock_testkit::server_version(&mut c) >= (7, 2);
    for effect in ["dlock.apply", "dlock.raise"] {
        assert_eq!(
            listed.contains(&effect.to_string()),
            !internal,
            "{effect} listed"
        );
        if internal {
            let error = error_of(&mut c, &[effect, "1"]);
            assert!(error.starts_with("ERR unknown command"), "{error}");
        } else if has_categories {
            assert!(
                categories(&mut c, effect).contains(&"@dangerous".to_string()),
                "{effect}"
            );
        }
    }
}

#[test]
fn every_lock_change_sends_a_keyspace_event_of_the_module_class() {
    let server = Server::start();
    let mut c = server.conn();
    redis::cmd("CONFIG")
        .arg(&["SET", "notify-keyspace-events", "Ed"])
        .exec(&mut c)
        .unwrap();
    let mut listener = server.conn();
    listener
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:dlock.*").unwrap();
    let token = acquire(&mut c, "k", "o", 60_000).unwrap();
    assert_eq!(acquire(&mut c, "k", "other", 60_000), None); // no change, no event
    extend(&mut c, "k", "o", 60_000);
    fence(&mut c, "k", "o", token + 1);
    release(&mut c, "k", "o");
    acquire(&mut c, "k", "o", 60_000).unwrap();
    redis::cmd("DLOCK.FORCERELEASE")
        .arg("k")
        .exec(&mut c)
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..6 {
        let message = pubsub.get_message().expect("an event");
        let channel = message.get_channel_name().to_string();
        let key: String = message.get_payload().unwrap();
        seen.push(format!(
            "{} {key}",
            channel.trim_start_matches("__keyevent@0__:")
        ));
    }
    assert_eq!(
        seen,
        [
            "dlock.acquire k",
            "dlock.extend k",
            "dlock.fence k",
            "dlock.release k",
            "dlock.acquire k",
            "dlock.forcerelease k"
        ]
    );
}
