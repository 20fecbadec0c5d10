//! `DLOCK.STATUS` in every state of a resource, its fields in the documented order (RESP2
//! clients read them by position), its holder list capped by COUNT; `DLOCK.TOP` bounded by
//! COUNT in rows whatever the resources hold.

use crate::common::group::{take, Kind};
use crate::common::*;

use std::thread;
use std::time::Duration;

/// STATUS as (field, value) pairs in reply order; holders as their own pairs.
fn fields(c: &mut Connection, key: &str, extra: &[&str]) -> Option<Vec<(String, Value)>> {
    let mut cmd = redis::cmd("DLOCK.STATUS");
    cmd.arg(key);
    for e in extra {
        cmd.arg(*e);
    }
    let reply: Vec<Value> = cmd.query::<Option<Vec<Value>>>(c).expect("DLOCK.STATUS")?;
    let pairs = reply.chunks(2).map(|p| {
        let name: String = redis::from_redis_value_ref(&p[0]).expect("a field name");
        (name, p[1].clone())
    });
    Some(pairs.collect())
}

fn names(pairs: &[(String, Value)]) -> Vec<&str> {
    pairs.iter().map(|(n, _)| n.as_str()).collect()
}

fn field<'a>(pairs: &'a [(String, Value)], name: &str) -> &'a Value {
    &pairs.iter().find(|(n, _)| n == name).expect(name).1
}

/// The holders' (field names, owner) in listed order.
fn holders(pairs: &[(String, Value)]) -> Vec<(Vec<String>, String)> {
    let list: Vec<Vec<Value>> = redis::from_redis_value_ref(field(pairs, "holders")).unwrap();
    list.iter()
        .map(|h| {
            let names = h
                .chunks(2)
                .map(|p| redis::from_redis_value_ref(&p[0]).unwrap());
            let owner = redis::from_redis_value_ref(&h[1]).unwrap();
            (names.collect(), owner)
        })
        .collect()
}

const PLAIN: [&str; 5] = ["owner", "token", "ttl", "holds", "waiters"];
const HOLDER: [&str; 5] = ["owner", "token", "ttl", "holds", "mode"];

#[test]
fn the_form_follows_the_live_holders_in_every_state() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(fields(&mut c, "doc", &[]), None, "free: nil");
    take(&mut c, "doc", "a", 60_000, Kind::Exclusive).unwrap();
    assert_eq!(names(&fields(&mut c, "doc", &[]).unwrap()), PLAIN);
    // A downgrade: the exclusive entry and its shared side.
    take(&mut c, "doc", "a", 200, Kind::Shared).unwrap();
    let both = fields(&mut c, "doc", &[]).unwrap();
    assert_eq!(names(&both), ["kind", "count", "holders", "waiters"]);
    assert_eq!(field(&both, "kind"), &Value::SimpleString("shared".into()));
    let listed = holders(&both);
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|(n, _)| n == &HOLDER));
    // The shared side's lease ends: one exclusive holder is a plain lock again, at once (the
    // stored table still has the ended entry until the next write).
    thread::sleep(Duration::from_millis(300));
    assert_eq!(names(&fields(&mut c, "doc", &[]).unwrap()), PLAIN);
    // Taken again and released: RELEASE drops the exclusive entry first, leaving the reader.
    take(&mut c, "doc", "a", 60_000, Kind::Shared).unwrap();
    assert_eq!(release(&mut c, "doc", "a"), 1);
    let reader = fields(&mut c, "doc", &[]).unwrap();
    assert_eq!(
        field(&reader, "kind"),
        &Value::SimpleString("shared".into())
    );
    assert_eq!(holders(&reader)[0].0, HOLDER);
    take(&mut c, "pool", "p", 60_000, Kind::Limit(3)).unwrap();
    let pool = fields(&mut c, "pool", &[]).unwrap();
    assert_eq!(
        names(&pool),
        ["kind", "limit", "count", "holders", "waiters"]
    );
    assert_eq!(
        field(&pool, "kind"),
        &Value::SimpleString("semaphore".into())
    );
}

#[test]
fn count_caps_the_holders_listed_soonest_lease_end_first() {
    let server = Server::start();
    let mut c = server.conn();
    for i in 0..250 {
        let ttl = 60_000 - i * 10; // later owners' leases end sooner
        take(&mut c, "pool", &format!("p{i:03}"), ttl, Kind::Limit(300)).unwrap();
    }
    let default = fields(&mut c, "pool", &[]).unwrap();
    assert_eq!(field(&default, "count"), &Value::Int(250));
    assert_eq!(holders(&default).len(), 100, "COUNT 100 by default");
    let three = fields(&mut c, "pool", &["COUNT", "3"]).unwrap();
    let owners: Vec<String> = holders(&three).into_iter().map(|h| h.1).collect();
    assert_eq!(owners, ["p249", "p248", "p247"]);
    for bad in ["0", "10001", "-1", "x"] {
        let err = error_of(&mut c, &["DLOCK.STATUS", "pool", "COUNT", bad]);
        assert!(err.starts_with("ERR"), "COUNT {bad}: {err}");
    }
    let err = error_of(&mut c, &["DLOCK.STATUS", "pool", "LIMIT", "3"]);
    assert!(err.starts_with("ERR"), "{err}");
}

#[test]
fn top_returns_at_most_count_rows_whatever_the_resources_hold() {
    let server = Server::start();
    let mut c = server.conn();
    for r in 0..20 {
        let mut pipe = redis::pipe();
        for i in 0..200 {
            pipe.cmd("DLOCK.ACQUIRE")
                .arg(format!("sem:{r}"))
                .arg(format!("o{i}"))
                .arg(60_000)
                .arg("LIMIT")
                .arg(10_000);
        }
        let _: Vec<i64> = pipe.query(&mut c).unwrap();
    }
    for count in [1, 10] {
        let (mut cursor, mut rows) = (0u64, Vec::new());
        loop {
            let reply: Vec<Value> = redis::cmd("DLOCK.TOP")
                .arg("CURSOR")
                .arg(cursor)
                .arg("COUNT")
                .arg(count)
                .query(&mut c)
                .unwrap();
            let held: Vec<Vec<Value>> = redis::from_redis_value_ref(&reply[5]).unwrap();
            assert!(held.len() <= count, "COUNT {count}: {} rows", held.len());
            rows.extend(held);
            let next: String = redis::from_redis_value_ref(&reply[1]).unwrap();
            cursor = next.parse().unwrap();
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(rows.len(), 20, "one row per resource over the walk");
        for row in &rows {
            let holders: i64 = redis::from_redis_value_ref(&row[7]).unwrap();
            assert_eq!(holders, 200);
        }
    }
}
