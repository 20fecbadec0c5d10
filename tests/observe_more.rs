//! `DLOCK.OBSERVE`, continued from tests/observe.rs: a PROCLAIM seen through OWNER, many
//! observers, RESP3, a cluster slot moving away, a replica, a handoff to a queued waiter.

use crate::common::observing::*;
use crate::common::*;

use std::thread;
use std::time::Duration;

#[test]
fn one_release_wakes_a_hundred_observers() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let observers: Vec<_> = (0..100)
        .map(|_| start(&server, &["res", "AFTER", &token, "TIMEOUT", "30000"]))
        .collect();
    eventually("100 observers blocked", 10_000, || {
        blocked_clients(&mut c) == 100
    });
    release(&mut c, "res", "alice");
    for rx in &observers {
        assert_eq!(answer(rx).0, None);
    }
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn the_reply_is_a_map_in_resp3() {
    let server = Server::start();
    let client = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let mut c = client.get_connection().unwrap();
    acquire(&mut c, "res", "alice", 10_000).unwrap();
    let reply: Value = redis::cmd("DLOCK.OBSERVE")
        .arg("res")
        .query(&mut c)
        .unwrap();
    let Value::Map(fields) = reply else {
        panic!("expected a RESP3 map, got {reply:?}")
    };
    let names: Vec<String> = fields
        .iter()
        .map(|(k, _)| redis::from_redis_value_ref(k).unwrap())
        .collect();
    assert_eq!(names, ["owner", "token", "ttl"]);
}

#[test]
fn an_observer_whose_slot_moves_away_is_redirected() {
    let cluster = dlock_testkit::Cluster::start(3, 1);
    let key = "orders:42";
    let from = cluster.master_for(key);
    let to = (0..3).find(|&i| i != from).unwrap();
    let token = acquire(&mut cluster.nodes[from].conn(), key, "w1", 60_000).unwrap();
    let rx = observer(&cluster.nodes[from], &[key, "AFTER", &token.to_string()]);
    cluster.migrate_slot(key, from, to, || thread::sleep(Duration::from_millis(300)));
    let (reply, _) = rx.recv_timeout(Duration::from_secs(10)).expect("an answer");
    let error = reply.expect_err("a redirect, not the lock's absence");
    let redirect = format!(
        "{} {}",
        error.code().unwrap_or_default(),
        error.detail().unwrap_or_default()
    );
    let slot = cluster.slot(key);
    let target = format!("{slot} 127.0.0.1:{}", cluster.nodes[to].port());
    assert!(
        redirect == format!("ASK {target}") || redirect == format!("MOVED {target}"),
        "{redirect}"
    );
    let mut c = cluster.nodes[to].conn();
    assert_eq!(
        observe(&mut c, &[key]).map(|h| h.1),
        Some(token),
        "held on the new node"
    );
}

#[test]
fn an_observer_on_a_replica_hears_the_masters_changes() {
    let master = Server::start();
    let replica = replica_of(&master);
    let mut m = master.conn();
    let token = acquire(&mut m, "res", "alice", 60_000).unwrap();
    sync(&mut m);
    let rx = observer(&replica, &["res", "AFTER", &token.to_string()]);
    release(&mut m, "res", "alice");
    assert_eq!(answer(&rx).0, None, "the release, replicated");
    let rx = observer(&replica, &["res", "AFTER", "0"]);
    let next = acquire(&mut m, "res", "bob", 60_000).unwrap();
    let (state, _) = answer(&rx);
    assert_eq!(state.map(|h| (h.0, h.1)), Some(("bob".to_string(), next)));
}

#[test]
fn a_handoff_to_a_waiter_wakes_the_observer_with_the_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap();
    let mut w = server.conn();
    let waiter = thread::spawn(move || -> redis::RedisResult<Option<i64>> {
        redis::cmd("DLOCK.ACQUIRE")
            .arg(&["res", "bob", "60000", "WAIT", "10000"])
            .query(&mut w)
    });
    eventually("bob queued", 5_000, || blocked_clients(&mut c) == 1);
    let rx = observer(&server, &["res", "AFTER", &token.to_string()]);
    release(&mut c, "res", "alice");
    let (state, _) = answer(&rx);
    let granted = waiter.join().unwrap().unwrap().expect("bob granted");
    assert_eq!(
        state.map(|h| (h.0, h.1)),
        Some(("bob".to_string(), granted))
    );
}
#[test]
fn a_proclaim_wakes_an_observer_that_named_the_owner() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "leader", "a v1", 60_000).unwrap();
    let t = token.to_string();
    let blind = observer(&server, &["leader", "AFTER", &t, "TIMEOUT", "1500"]);
    let named = observer(&server, &["leader", "AFTER", &t, "OWNER", "a v1"]);
    let proclaimed: i64 = redis::cmd("DLOCK.PROCLAIM")
        .arg(&["leader", "a v1", &t, "a v2"])
        .query(&mut c)
        .unwrap();
    assert_eq!(proclaimed, 1);
    let (seen, _) = answer(&named);
    assert_eq!(seen.map(|(o, tk, _)| (o, tk)), Some(("a v2".into(), token)));
    assert!(
        still_blocked(&blind, 300),
        "without OWNER a new owner under the same token is no news"
    );
    let now = observe(&mut c, &["leader", "AFTER", &t, "OWNER", "a v1"]);
    assert_eq!(
        now.map(|h| h.0),
        Some("a v2".into()),
        "at once: the owner differs"
    );
    let error = error_of(&mut c, &["DLOCK.OBSERVE", "leader", "OWNER", "a v2"]);
    assert!(error.starts_with("ERR OWNER"), "{error}");
    let long = "o".repeat(257);
    let error = error_of(
        &mut c,
        &["DLOCK.OBSERVE", "leader", "AFTER", &t, "OWNER", &long],
    );
    assert!(error.starts_with("ERR"), "{error}");
    let free = observe(
        &mut c,
        &["free", "AFTER", "0", "OWNER", "", "TIMEOUT", "50"],
    );
    assert_eq!(
        free, None,
        "AFTER 0 OWNER \"\": saw it free, still free at the timeout"
    );
}
