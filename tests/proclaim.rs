//! `DLOCK.PROCLAIM key owner token new-owner`: a plain lock's holder hands the lock to a new
//! owner name (an election's new value) without losing it: the same token, lease and holds,
//! replicated, persisted, and refused (0, nothing changed) to anyone but the holder with its
//! token.

use crate::common::*;

fn proclaim(c: &mut redis::Connection, key: &str, owner: &str, token: i64, new: &str) -> i64 {
    redis::cmd("DLOCK.PROCLAIM")
        .arg(&[key, owner])
        .arg(token)
        .arg(new)
        .query(c)
        .expect("DLOCK.PROCLAIM")
}

#[test]
fn the_holder_renames_itself_keeping_token_and_lease() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "leader", "a1 10.0.0.1:80", 60_000).unwrap();
    let before = status(&mut c, "leader").unwrap();
    assert_eq!(
        proclaim(&mut c, "leader", "a1 10.0.0.1:80", token, "a1 10.0.0.2:80"),
        1
    );
    let (owner, now_token, ttl, holds) = status(&mut c, "leader").unwrap();
    assert_eq!(
        (owner.as_str(), now_token, holds),
        ("a1 10.0.0.2:80", token, 1)
    );
    assert!(
        ttl <= before.2 && ttl > before.2 - 1_000,
        "lease kept: {ttl} vs {}",
        before.2
    );
    assert!(
        pttl(&mut c, "leader") > 0,
        "the key's TTL follows the lease"
    );
    assert_eq!(
        release(&mut c, "leader", "a1 10.0.0.1:80"),
        0,
        "the old name holds nothing"
    );
    assert_eq!(extend(&mut c, "leader", "a1 10.0.0.2:80", 60_000), 1);
    assert_eq!(
        proclaim(&mut c, "leader", "a1 10.0.0.2:80", token, "a1 10.0.0.2:80"),
        1,
        "same name"
    );
    assert_eq!(
        proclaim(&mut c, "leader", "a1 10.0.0.2:80", token - 1, "a1 v3"),
        1,
        "a late grant's node holds a token larger than the epoch named"
    );
    assert_eq!(
        status(&mut c, "leader").unwrap().1,
        token,
        "its own token kept"
    );
    assert_eq!(release(&mut c, "leader", "a1 v3"), 1);
    assert_eq!(counter(&mut c), token, "no token issued");
}

#[test]
fn anyone_else_gets_zero_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(proclaim(&mut c, "free", "a", 1, "b"), 0, "nobody holds it");
    let token = acquire(&mut c, "k", "a", 60_000).unwrap();
    assert_eq!(proclaim(&mut c, "k", "b", token, "c"), 0, "not the holder");
    assert_eq!(
        proclaim(&mut c, "k", "a", token + 1, "c"),
        0,
        "another token"
    );
    // A resource held shared or as a semaphore has no one holder to follow: refused by
    // OBSERVE's rule, nothing changed.
    for (key, kind, words) in [
        ("s", "SHARED", "a lock held shared"),
        ("sem", "LIMIT", "a semaphore with LIMIT 2"),
    ] {
        let mut acquire = redis::cmd("DLOCK.ACQUIRE");
        acquire.arg(&[key, "a", "60000", kind]);
        if kind == "LIMIT" {
            acquire.arg(2);
        }
        let token: i64 = acquire.query(&mut c).unwrap();
        let error = error_of(
            &mut c,
            &["DLOCK.PROCLAIM", key, "a", &token.to_string(), "c"],
        );
        let want = format!("WRONGKIND the resource is {words}: DLOCK.PROCLAIM follows");
        assert!(error.starts_with(&want), "{key}: {error}");
        let status: redis::Value = redis::cmd("DLOCK.STATUS").arg(key).query(&mut c).unwrap();
        let mut words = Vec::new();
        bulk_strings(&status, &mut words);
        assert!(words.contains(&b"a".to_vec()), "{key}: {status:?}");
        assert!(!words.contains(&b"c".to_vec()), "{key}: {status:?}");
    }
    let short = acquire(&mut c, "short", "a", 50).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(80));
    assert_eq!(
        proclaim(&mut c, "short", "a", short, "c"),
        0,
        "an ended lease"
    );
    for args in [
        &["DLOCK.PROCLAIM", "k", "a", "abc", "c"][..],
        &["DLOCK.PROCLAIM", "k", "a", "-1", "c"],
        &["DLOCK.PROCLAIM", "k", "a", &token.to_string(), ""],
        &[
            "DLOCK.PROCLAIM",
            "k",
            "a",
            &token.to_string(),
            &"x".repeat(257),
        ],
        &["DLOCK.PROCLAIM", "k", "a", &token.to_string()],
    ] {
        let error = error_of(&mut c, args);
        assert!(error.starts_with("ERR"), "{args:?}: {error}");
    }
    redis::cmd("SET").arg(&["plain", "v"]).exec(&mut c).unwrap();
    let error = error_of(&mut c, &["DLOCK.PROCLAIM", "plain", "a", "1", "b"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    assert_eq!(status(&mut c, "k").unwrap().0, "a", "unchanged");
}

#[test]
fn a_replica_and_a_reload_see_the_new_owner() {
    let master = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let replica = replica_of(&master);
    let mut c = master.conn();
    let token = acquire(&mut c, "leader", "a", 60_000).unwrap();
    assert_eq!(proclaim(&mut c, "leader", "a", token, "a v2"), 1);
    sync(&mut c);
    let mut r = replica.conn();
    let (owner, seen, ttl, _) = status(&mut r, "leader").unwrap();
    assert_eq!((owner.as_str(), seen), ("a v2", token));
    assert!(ttl > 50_000, "{ttl}");
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    let (owner, seen, _, _) = status(&mut c, "leader").unwrap();
    assert_eq!((owner.as_str(), seen), ("a v2", token));
}

#[test]
fn a_queued_waiter_is_served_when_the_renamed_holder_releases() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "leader", "a", 60_000).unwrap();
    let port = server.port();
    let waiter = std::thread::spawn(move || {
        let mut w = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let granted: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
            .arg(&["leader", "b", "60000", "WAIT", "5000"])
            .query(&mut w)
            .unwrap();
        granted
    });
    eventually("b queued", 5_000, || {
        let waiters: Vec<redis::Value> = redis::cmd("DLOCK.WAITERS")
            .arg("leader")
            .query(&mut c)
            .unwrap();
        !waiters.is_empty()
    });
    assert_eq!(proclaim(&mut c, "leader", "a", token, "a v2"), 1);
    assert_eq!(
        status(&mut c, "leader").unwrap().0,
        "a v2",
        "the waiter still waits"
    );
    assert_eq!(release(&mut c, "leader", "a v2"), 1);
    let granted = waiter.join().unwrap().expect("b granted at the release");
    assert!(granted > token);
}

/// Every bulk string in a reply, nested ones included.
fn bulk_strings(value: &redis::Value, out: &mut Vec<Vec<u8>>) {
    match value {
        redis::Value::BulkString(bytes) => out.push(bytes.clone()),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().for_each(|v| bulk_strings(v, out))
        }
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            bulk_strings(k, out);
            bulk_strings(v, out);
        }),
        _ => {}
    }
}
