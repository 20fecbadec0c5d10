//! `DLOCK.TOP`: keys with waiters from the wait registry (longest queue, then oldest waiter,
//! first), held locks through a bounded SCAN walk with a cursor, bad input refused.

use crate::common::*;

use std::collections::BTreeMap;
use std::thread;

/// One step: (next cursor, waiting rows, held rows), rows as Redis values.
type Step = (u64, Vec<Vec<Value>>, Vec<Vec<Value>>);

fn top(c: &mut Connection, args: &[&str]) -> Step {
    let mut cmd = redis::cmd("DLOCK.TOP");
    for a in args {
        cmd.arg(*a);
    }
    let reply: Vec<Value> = cmd.query(c).expect("DLOCK.TOP");
    let mut fields = BTreeMap::new();
    for pair in reply.chunks(2) {
        let name: String = redis::from_redis_value(pair[0].clone()).expect("field name");
        fields.insert(name, pair[1].clone());
    }
    let rows = |name: &str| -> Vec<Vec<Value>> {
        redis::from_redis_value(fields[name].clone()).expect("rows")
    };
    let cursor: String = redis::from_redis_value(fields["cursor"].clone()).expect("cursor");
    (
        cursor.parse().expect("numeric cursor"),
        rows("waiting"),
        rows("held"),
    )
}

fn text(v: &Value) -> String {
    redis::from_redis_value(v.clone()).expect("string")
}

fn int(v: &Value) -> i64 {
    redis::from_redis_value(v.clone()).expect("integer")
}

/// Parks `owner` on `key` with WAIT on a connection of its own, until it is queued.
fn park(server: &Server, key: &str, owner: &str) -> thread::JoinHandle<()> {
    let mut c = server.conn();
    let (key_, owner_) = (key.to_string(), owner.to_string());
    let before = dlock_testkit::waiters(server, key);
    let handle = thread::spawn(move || {
        let _: Value = redis::cmd("DLOCK.ACQUIRE")
            .arg(&key_)
            .arg(&owner_)
            .arg(60_000)
            .arg("WAIT")
            .arg(2_000)
            .query(&mut c)
            .expect("wait");
    });
    eventually("queued", 5_000, || {
        dlock_testkit::waiters(server, key) > before
    });
    handle
}

#[test]
fn waiting_keys_come_longest_queue_first_then_oldest_waiter_with_their_holder() {
    let server = Server::start();
    let mut c = server.conn();
    let tokens: Vec<i64> = ["short", "long", "old"]
        .iter()
        .map(|k| acquire(&mut c, k, "holder", 60_000).expect("granted"))
        .collect();
    let mut parked = vec![park(&server, "old", "w0")];
    thread::sleep(std::time::Duration::from_millis(30));
    parked.push(park(&server, "short", "w1"));
    for w in ["w2", "w3"] {
        parked.push(park(&server, "long", w));
    }
    let (_, waiting, held) = top(&mut c, &[]);
    let order: Vec<(String, i64)> = waiting.iter().map(|r| (text(&r[0]), int(&r[1]))).collect();
    assert_eq!(
        order,
        [("long".into(), 2), ("old".into(), 1), ("short".into(), 1)]
    );
    let old = &waiting[1];
    assert!(int(&old[2]) >= 30, "oldest wait {}ms", int(&old[2]));
    assert_eq!((text(&old[3]), int(&old[4])), ("holder".into(), tokens[2]));
    assert!((59_000..=60_000).contains(&int(&old[5])));
    assert_eq!(held.len(), 3);
    // COUNT caps the rows.
    assert_eq!(top(&mut c, &["COUNT", "1"]).1.len(), 1);
    for key in ["short", "long", "old"] {
        release(&mut c, key, "holder");
    }
    for handle in parked {
        handle.join().expect("waiter");
    }
}

#[test]
fn held_locks_come_through_a_cursor_walk_of_bounded_steps() {
    let server = Server::start();
    let mut c = server.conn();
    let mut pipe = redis::pipe();
    for i in 0..2_000 {
        pipe.cmd("SET").arg(format!("plain:{i}")).arg("x").ignore();
    }
    pipe.query::<()>(&mut c).expect("plain keys");
    let mut expected = BTreeMap::new();
    for i in 0..50 {
        let key = format!("lock:{i}");
        let token = acquire(&mut c, &key, &format!("owner{i}"), 60_000).expect("granted");
        expected.insert(key, (format!("owner{i}"), token));
    }
    acquire(&mut c, "gone", "o", 1).expect("granted");
    thread::sleep(std::time::Duration::from_millis(5));
    let (mut cursor, mut found, mut steps) = (0u64, BTreeMap::new(), 0);
    loop {
        let (next, waiting, held) = top(&mut c, &["CURSOR", &cursor.to_string(), "COUNT", "50"]);
        assert!(
            steps == 0 || waiting.is_empty(),
            "waiting rows only on the first step"
        );
        assert!(held.len() <= 200, "one step returned {} rows", held.len());
        for row in held {
            assert_eq!(int(&row[4]), 1);
            assert_eq!(int(&row[5]), 0);
            assert!((1..=60_000).contains(&int(&row[3])));
            found.insert(text(&row[0]), (text(&row[1]), int(&row[2])));
        }
        steps += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(found, expected, "every held lock once, the expired one not");
    assert!(steps > 5, "{steps} steps: COUNT bounds each one");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "a", "o", 60_000).expect("granted");
    let cases: [(&[&str], &str); 7] = [
        (
            &["COUNT", "0"],
            "ERR COUNT must be an integer from 1 to 10000, got '0'",
        ),
        (
            &["COUNT", "10001"],
            "ERR COUNT must be an integer from 1 to 10000",
        ),
        (&["COUNT", "x"], "ERR COUNT must be"),
        (
            &["CURSOR", "-1"],
            "ERR CURSOR must be a cursor DLOCK.TOP returned",
        ),
        (&["CURSOR", "007"], "ERR CURSOR must be a cursor"),
        (&["CURSOR"], "needs a value"),
        (&["COUNT", "5", "COUNT", "5"], "ERR"),
    ];
    for (args, expected) in cases {
        let mut argv = vec!["DLOCK.TOP"];
        argv.extend_from_slice(args);
        let error = error_of(&mut c, &argv);
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    assert_eq!(status(&mut c, "a").map(|s| s.0), Some("o".to_string()));
    let (_, _, held) = top(&mut c, &["COUNT", "10000"]);
    assert_eq!(held.len(), 1);
}

#[test]
fn the_database_selected_is_the_one_listed() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "zero", "o", 60_000).expect("granted");
    redis::cmd("SELECT")
        .arg(1)
        .query::<()>(&mut c)
        .expect("select");
    acquire(&mut c, "one", "o", 60_000).expect("granted");
    let (_, _, held) = top(&mut c, &["COUNT", "1000"]);
    let keys: Vec<String> = held.iter().map(|r| text(&r[0])).collect();
    assert_eq!(keys, ["one"]);
}

#[test]
fn each_held_resource_is_one_row_with_its_first_holder_and_count() {
    let server = Server::start();
    let mut c = server.conn();
    let mut take = |key: &str, owner: &str, how: &[&str]| -> i64 {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg(key).arg(owner).arg(60_000);
        for word in how {
            cmd.arg(*word);
        }
        cmd.query::<Option<i64>>(&mut c)
            .expect("acquire")
            .expect("granted")
    };
    take("readers", "r1", &["SHARED"]);
    take("readers", "r2", &["SHARED"]);
    take("permits", "p1", &["LIMIT", "3"]);
    take("plain", "w", &[]);
    let (_, _, held) = top(&mut c, &["COUNT", "1000"]);
    let mut rows: Vec<(String, String, String, i64)> = held
        .iter()
        .map(|r| (text(&r[0]), text(&r[1]), text(&r[6]), int(&r[7])))
        .collect();
    rows.sort();
    let expected = [
        ("permits", "p1", "permit", 1),
        ("plain", "w", "exclusive", 1),
        ("readers", "r1", "shared", 2), // r1's lease ends first (granted first)
    ]
    .map(|(k, o, m, n)| (k.to_string(), o.to_string(), m.to_string(), n));
    assert_eq!(rows, expected);
}
