//! Sets (docs/multi.md): several keys of one node taken all or nothing with one token
//! (`DLOCK.ACQUIREALL`), queued on every key at once in the node's one order, given back whole
//! (`RELEASEALL`), kept whole (`EXTENDALL`, `FENCEALL`: a set missing a member is lost), wounded
//! whole, and kept by persistence and replication like any lock.

use crate::common::*;

use std::sync::mpsc;
use std::thread;

type Reply = redis::RedisResult<Option<i64>>;

fn all(c: &mut Connection, command: &str, keys: &[&str], owner: &str, rest: &[&str]) -> Value {
    let mut cmd = redis::cmd(command);
    cmd.arg(keys.len()).arg(keys).arg(owner).arg(rest);
    cmd.query(c).unwrap_or_else(|e| panic!("{command}: {e}"))
}

fn take_all(c: &mut Connection, keys: &[&str], owner: &str, rest: &[&str]) -> Option<i64> {
    match all(
        c,
        "DLOCK.ACQUIREALL",
        keys,
        owner,
        &[&["60000"], rest].concat(),
    ) {
        Value::Int(token) => Some(token),
        Value::Nil => None,
        other => panic!("ACQUIREALL replied {other:?}"),
    }
}

/// `DLOCK.EXTENDALL keys owner 30000`: 1 extended, 0 lost.
fn extend_all(c: &mut Connection, keys: &[&str], owner: &str) -> i64 {
    int(all(c, "DLOCK.EXTENDALL", keys, owner, &["30000"]))
}

fn int(v: Value) -> i64 {
    redis::from_redis_value(v).expect("an integer")
}

fn holder(c: &mut Connection, key: &str) -> Option<(String, i64)> {
    status(c, key).map(|(owner, token, _, _)| (owner, token))
}

fn queued(c: &mut Connection, key: &str) -> Vec<String> {
    let listed: Vec<(String, Option<i64>, i64, String)> = redis::cmd("DLOCK.WAITERS")
        .arg(key)
        .query(c)
        .expect("WAITERS");
    listed.into_iter().map(|w| w.0).collect()
}

/// `ACQUIREALL keys owner 60000 WAIT 10000 [rest]` on its own connection, once queued.
fn wait_all(server: &Server, keys: &[&str], owner: &str, rest: &[&str]) -> mpsc::Receiver<Reply> {
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    let keys_: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let (owner_, rest_): (String, Vec<String>) =
        (owner.into(), rest.iter().map(|r| r.to_string()).collect());
    thread::spawn(move || {
        let mut cmd = redis::cmd("DLOCK.ACQUIREALL");
        cmd.arg(keys_.len())
            .arg(&keys_)
            .arg(&owner_)
            .arg(60_000)
            .arg("WAIT")
            .arg(10_000);
        let _ = tx.send(cmd.arg(&rest_).query(&mut c));
    });
    let mut probe = server.conn();
    eventually("queued", 5_000, || {
        queued(&mut probe, keys[0]).contains(&owner.to_string())
    });
    rx
}

#[test]
fn a_set_is_granted_whole_under_one_token_or_not_at_all() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(acquire(&mut c, "b", "other", 60_000).is_some());
    assert_eq!(take_all(&mut c, &["a", "b", "c"], "me", &[]), None);
    for key in ["a", "c"] {
        assert_eq!(
            holder(&mut c, key),
            None,
            "{key}: nothing held after a refused set"
        );
    }
    assert_eq!(release(&mut c, "b", "other"), 1);
    let token = take_all(&mut c, &["a", "b", "c"], "me", &[]).expect("granted");
    for key in ["a", "b", "c"] {
        assert_eq!(holder(&mut c, key), Some(("me".into(), token)), "{key}");
    }
    // Asked again: renewed, the same token; a set overlapping it in part is refused.
    assert_eq!(take_all(&mut c, &["a", "b", "c"], "me", &[]), Some(token));
    let partly = error_of(&mut c, &["DLOCK.ACQUIREALL", "2", "a", "z", "me", "1000"]);
    assert!(
        partly.contains("already holds 'a' otherwise than this set asks"),
        "{partly}"
    );
    // The same keys in another mode: the same words (release it first).
    let line = [
        "DLOCK.ACQUIREALL",
        "3",
        "a",
        "b",
        "c",
        "me",
        "1000",
        "MODES",
        "xxs",
    ];
    let modes = error_of(&mut c, &line);
    assert!(modes.contains("otherwise than this set asks"), "{modes}");
    assert_eq!(
        int(all(&mut c, "DLOCK.RELEASEALL", &["a", "b", "c"], "me", &[])),
        3
    );
    for key in ["a", "b", "c"] {
        assert_eq!(holder(&mut c, key), None, "{key}");
    }
}

#[test]
fn bad_sets_are_refused_before_anything_changes() {
    let server = Server::start();
    let mut c = server.conn();
    let before = counter(&mut c);
    for (args, words) in [
        (vec!["2", "a", "a", "me", "1000"], "given twice"),
        (vec!["0", "me", "1000", "x"], "numkeys must be"),
        (vec!["17", "me", "1000", "x"], "numkeys must be"),
        (vec!["3", "a", "b", "me"], "wrong number of arguments"),
        (
            vec!["2", "a", "b", "me", "1000", "MODES", "x"],
            "MODES must be 2 letters",
        ),
        (
            vec!["2", "a", "b", "me", "1000", "MODES", "xp"],
            "MODES must be",
        ),
        (vec!["2", "a", "b", "me", "0"], "ttl-ms must be"),
        (vec!["2", "a", "b", "me", "1000", "TICKET", "5"], "TICKET"),
    ] {
        let line = [&["DLOCK.ACQUIREALL"][..], &args].concat();
        let error = error_of(&mut c, &line);
        assert!(
            error.starts_with("ERR") && error.contains(words),
            "{args:?}: {error}"
        );
    }
    assert_eq!(counter(&mut c), before, "no token issued");
    assert_eq!(int(redis::cmd("DBSIZE").query::<Value>(&mut c).unwrap()), 0);
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg("GETKEYS")
        .arg("DLOCK.ACQUIREALL")
        .arg(2)
        .arg("k1")
        .arg("k2")
        .arg("me")
        .arg(1000)
        .query(&mut c)
        .expect("GETKEYS");
    assert_eq!(keys, ["k1", "k2"]);
}

#[test]
fn a_waiting_set_holds_nothing_and_later_requests_do_not_overtake_it() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(acquire(&mut c, "b", "holder", 60_000).is_some());
    let set = wait_all(&server, &["a", "b"], "set", &[]);
    assert_eq!(
        holder(&mut c, "a"),
        None,
        "a stays free while the set waits"
    );
    // A later request for the free key waits behind the set (fairness), nil without WAIT.
    assert_eq!(acquire(&mut c, "a", "late", 60_000), None);
    assert_eq!(release(&mut c, "b", "holder"), 1);
    let token = set
        .recv()
        .expect("answered")
        .expect("reply")
        .expect("granted");
    assert_eq!(holder(&mut c, "a"), Some(("set".into(), token)));
    assert_eq!(holder(&mut c, "b"), Some(("set".into(), token)));
}

#[test]
fn sets_asked_in_opposite_orders_never_wait_for_each_other() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(acquire(&mut c, "a", "h1", 60_000).is_some());
    assert!(acquire(&mut c, "b", "h2", 60_000).is_some());
    let first = wait_all(&server, &["a", "b"], "s1", &[]);
    let second = wait_all(&server, &["b", "a"], "s2", &[]);
    // Both heads of both queues are s1 (one node-wide order): no cycle.
    assert_eq!(queued(&mut c, "a"), ["s1", "s2"]);
    assert_eq!(queued(&mut c, "b"), ["s1", "s2"]);
    release(&mut c, "a", "h1");
    release(&mut c, "b", "h2");
    let t1 = first
        .recv()
        .expect("s1")
        .expect("reply")
        .expect("s1 granted");
    assert_eq!(
        int(all(&mut c, "DLOCK.RELEASEALL", &["a", "b"], "s1", &[])),
        2
    );
    let t2 = second
        .recv()
        .expect("s2")
        .expect("reply")
        .expect("s2 granted");
    assert!(t2 > t1);
}

#[test]
fn a_set_missing_a_member_is_lost_whole_at_its_next_extend() {
    let server = Server::start();
    let mut c = server.conn();
    let token = take_all(&mut c, &["a", "b"], "me", &[]).expect("granted");
    assert_eq!(extend_all(&mut c, &["a", "b"], "me"), 1);
    let _: () = redis::cmd("DEL").arg("a").query(&mut c).unwrap();
    assert_eq!(extend_all(&mut c, &["a", "b"], "me"), 0);
    assert_eq!(holder(&mut c, "b"), None, "the rest was given back");
    let fenced = all(
        &mut c,
        "DLOCK.FENCEALL",
        &["a", "b"],
        "me",
        &[&token.to_string()],
    );
    assert_eq!(int(fenced), 0);
}

#[test]
fn a_smaller_ticket_wounding_one_member_wounds_the_whole_tentative_set() {
    let server = Server::start();
    let mut c = server.conn();
    let set = take_all(
        &mut c,
        &["a", "b"],
        "set",
        &["WAIT", "1000", "TICKET", "50"],
    );
    assert!(set.is_some(), "granted at once, tentative");
    let single: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
        .arg("a")
        .arg("early")
        .arg(60_000)
        .arg("WAIT")
        .arg(1000)
        .arg("TICKET")
        .arg(10)
        .query(&mut c)
        .expect("ACQUIRE");
    assert!(single.is_some(), "the smaller ticket wounds");
    assert_eq!(holder(&mut c, "a").map(|h| h.0), Some("early".into()));
    assert_eq!(
        holder(&mut c, "b"),
        None,
        "the set's other member went with it"
    );
    assert_eq!(info_field(&mut c, "revocations"), 2);
}

#[test]
fn a_committed_set_survives_reload_and_reaches_a_replica() {
    let master = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let replica = replica_of(&master);
    let mut c = master.conn();
    let token = take_all(&mut c, &["a", "b"], "me", &["MODES", "xs"]).expect("granted");
    let fenced = all(
        &mut c,
        "DLOCK.FENCEALL",
        &["a", "b"],
        "me",
        &[&(token + 5).to_string()],
    );
    assert_eq!(int(fenced), 1);
    sync(&mut c);
    let mut r = replica.conn();
    assert_eq!(holder(&mut r, "a"), Some(("me".into(), token + 5)));
    let _: () = redis::cmd("DEBUG")
        .arg("RELOAD")
        .query(&mut c)
        .expect("DEBUG RELOAD");
    assert_eq!(holder(&mut c, "a"), Some(("me".into(), token + 5)));
    assert_eq!(extend_all(&mut c, &["a", "b"], "me"), 1);
    assert!(counter(&mut c) >= token + 5);
}

#[test]
fn extendall_keeps_a_tentative_set_tentative_only_fenceall_commits_it() {
    let server = Server::start();
    let mut c = server.conn();
    take_all(
        &mut c,
        &["a", "b"],
        "set",
        &["WAIT", "100", "TICKET", "100"],
    )
    .expect("granted");
    assert_eq!(extend_all(&mut c, &["a", "b"], "set"), 1);
    let wound = |c: &mut Connection, key: &str, owner: &str| -> Option<i64> {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg(key).arg(owner).arg(30_000).arg("WAIT").arg(300);
        cmd.arg("TICKET").arg(50).query(c).expect("ACQUIRE")
    };
    assert!(
        wound(&mut c, "b", "early").is_some(),
        "still tentative after EXTENDALL"
    );
    assert_eq!(holder(&mut c, "a"), None, "the whole set went");
    let token = take_all(
        &mut c,
        &["c", "d"],
        "set2",
        &["WAIT", "100", "TICKET", "100"],
    );
    let token = token.expect("granted").to_string();
    assert_eq!(
        int(all(
            &mut c,
            "DLOCK.FENCEALL",
            &["c", "d"],
            "set2",
            &[&token]
        )),
        1
    );
    assert_eq!(
        wound(&mut c, "d", "early2"),
        None,
        "committed: never wounded"
    );
}

#[test]
fn a_member_overwritten_by_another_type_is_a_member_lost_not_an_error() {
    let server = Server::start();
    let mut c = server.conn();
    take_all(&mut c, &["a", "b", "c"], "me", &[]).expect("granted");
    let _: () = redis::cmd("SET")
        .arg("b")
        .arg("v")
        .query(&mut c)
        .expect("SET");
    assert_eq!(extend_all(&mut c, &["a", "b", "c"], "me"), 0);
    assert_eq!(holder(&mut c, "a"), None, "the rest given back");
    assert_eq!(holder(&mut c, "c"), None);
    take_all(&mut c, &["x", "y"], "me", &[]).expect("granted");
    let _: () = redis::cmd("SET")
        .arg("y")
        .arg("v")
        .query(&mut c)
        .expect("SET");
    let released = all(&mut c, "DLOCK.RELEASEALL", &["x", "y"], "me", &[]);
    assert_eq!(int(released), 1, "x released, y not a lock any more");
    assert_eq!(holder(&mut c, "x"), None);
}

#[test]
fn swapdb_of_a_database_with_itself_moves_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let token = take_all(&mut c, &["a", "b"], "me", &[]).expect("granted");
    let _: () = redis::cmd("SWAPDB")
        .arg(0)
        .arg(0)
        .query(&mut c)
        .expect("SWAPDB 0 0");
    assert_eq!(holder(&mut c, "a"), Some(("me".into(), token)));
    assert_eq!(extend_all(&mut c, &["a", "b"], "me"), 1);
}

#[test]
fn info_counts_a_waiting_set_once_and_each_member_released() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(acquire(&mut c, "k1", "holder", 60_000).is_some());
    let set = wait_all(&server, &["k1", "k2", "k3"], "set", &[]);
    assert_eq!(info_field(&mut c, "waiters"), 1, "one client waits");
    let before = info_field(&mut c, "releases");
    release(&mut c, "k1", "holder");
    set.recv()
        .expect("answered")
        .expect("reply")
        .expect("granted");
    assert_eq!(
        int(all(
            &mut c,
            "DLOCK.RELEASEALL",
            &["k1", "k2", "k3"],
            "set",
            &[]
        )),
        3
    );
    assert_eq!(
        info_field(&mut c, "releases"),
        before + 4,
        "the holder's one and the set's three"
    );
}
