//! A real replica (`replicaof`) holds the same locks with the same tokens and expiries, follows
//! every change, and refuses lock writes itself.

use crate::common::*;

#[test]
fn replica_mirrors_locks_tokens_and_expiry() {
    let master = Server::start();
    let replica = replica_of(&master);
    let (mut m, mut r) = (master.conn(), replica.conn());

    let token = acquire(&mut m, "res", "alice", 60_000).unwrap();
    acquire_reentrant(&mut m, "re", "bob", 60_000).unwrap();
    acquire_reentrant(&mut m, "re", "bob", 60_000).unwrap();
    sync(&mut m);
    let (owner, got, ttl, holds) = status(&mut r, "res").expect("lock on replica");
    assert_eq!((owner.as_str(), got, holds), ("alice", token, 1));
    assert!(
        (ttl - pttl(&mut m, "res")).abs() < 1_000,
        "same absolute expiry"
    );
    assert_eq!(status(&mut r, "re").unwrap().3, 2, "hold count replicated");
    assert_eq!(counter(&mut r), counter(&mut m), "counter replicated");

    extend(&mut m, "res", "alice", 5_000);
    let fenced = counter(&mut m) + 1_000;
    fence(&mut m, "res", "alice", fenced);
    release(&mut m, "re", "bob");
    sync(&mut m);
    let (_, got, ttl, _) = status(&mut r, "res").unwrap();
    assert_eq!(got, fenced, "fenced token replicated");
    assert!(ttl <= 5_000, "extension replicated: {ttl}");
    assert_eq!(counter(&mut r), fenced);
    assert_eq!(
        status(&mut r, "re").unwrap().3,
        1,
        "release of one hold replicated"
    );

    release(&mut m, "res", "alice");
    redis::cmd("DLOCK.FORCERELEASE")
        .arg("re")
        .exec(&mut m)
        .unwrap();
    sync(&mut m);
    assert_eq!(status(&mut r, "res"), None);
    assert_eq!(status(&mut r, "re"), None);
}

#[test]
fn replica_refuses_lock_writes() {
    let master = Server::start();
    let replica = replica_of(&master);
    let mut r = replica.conn();
    for args in [
        &["DLOCK.ACQUIRE", "k", "o", "1000"][..],
        &["DLOCK.RELEASE", "k", "o"],
        &["DLOCK.EXTEND", "k", "o", "1000"],
        &["DLOCK.FENCE", "k", "o", "5"],
        &["DLOCK.FORCERELEASE", "k"],
    ] {
        let error = error_of(&mut r, args);
        assert!(error.starts_with("READONLY"), "{args:?}: {error}");
    }
    assert_eq!(status(&mut r, "k"), None, "STATUS is allowed on a replica");
}

#[test]
fn expiry_on_the_master_reaches_the_replica() {
    let master = Server::start();
    let replica = replica_of(&master);
    let (mut m, mut r) = (master.conn(), replica.conn());
    acquire(&mut m, "short", "alice", 50).unwrap();
    sync(&mut m);
    eventually("master expires the lock", 2_000, || {
        status(&mut m, "short").is_none()
    });
    sync(&mut m);
    let exists: i64 = redis::cmd("EXISTS").arg("short").query(&mut r).unwrap();
    assert_eq!(exists, 0, "the master's DEL reached the replica");
}

#[test]
fn full_sync_carries_locks_and_the_counter_to_a_new_replica() {
    let master = Server::builder().config("dlock.clock-floor", "no").start();
    let mut m = master.conn();
    let token = acquire(&mut m, "res", "alice", 60_000).unwrap();
    acquire(&mut m, "gone", "bob", 60_000).unwrap();
    fence(&mut m, "gone", "bob", 4_242);
    release(&mut m, "gone", "bob");
    // The replica attaches after the fact: it learns everything from the master's RDB.
    let replica = Server::builder()
        .config("dlock.clock-floor", "no")
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start();
    let mut r = replica.conn();
    eventually("replica link up", 10_000, || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
        info.contains("master_link_status:up")
    });
    assert_eq!(status(&mut r, "res").unwrap().1, token);
    assert_eq!(
        counter(&mut r),
        4_242,
        "counter came with the RDB, without any lock holding it"
    );
}

#[test]
fn a_promoted_replica_continues_the_token_sequence() {
    let master = Server::builder().config("dlock.clock-floor", "no").start();
    let replica = Server::builder()
        .config("dlock.clock-floor", "no")
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start();
    let (mut m, mut r) = (master.conn(), replica.conn());
    eventually("replica link up", 10_000, || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
        info.contains("master_link_status:up")
    });
    let mut last = 0;
    for i in 0..20 {
        last = acquire(&mut m, &format!("k{i}"), "o", 60_000).unwrap();
    }
    sync(&mut m);
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .exec(&mut r)
        .unwrap();
    let next = acquire(&mut r, "new", "o", 60_000).unwrap();
    assert!(next > last, "promoted replica issued {next} after {last}");
}

/// `SHUTDOWN SAVE` and wait for the exit.
fn shutdown_saving(server: &mut Server) {
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").exec(&mut server.conn());
    server
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("shut down");
}

#[test]
fn a_master_restarted_from_rdb_replicates_grants_made_before_its_replica_returns() {
    let mut master = Server::builder().config("dlock.clock-floor", "no").start();
    let mut replica = replica_of(&master);
    let mut m = master.conn();
    acquire(&mut m, "before", "alice", 60_000).unwrap();
    sync(&mut m);
    shutdown_saving(&mut replica);
    shutdown_saving(&mut master);
    master.restart();
    // Redis restored the master's backlog from its RDB: this grant goes into it.
    let mut m = master.conn();
    let token = acquire(&mut m, "after", "bob", 60_000).unwrap();
    replica.restart();
    let mut r = replica.conn();
    eventually("replica link up", 10_000, || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
        info.contains("master_link_status:up")
    });
    sync(&mut m);
    let info: String = redis::cmd("INFO").arg("stats").query(&mut m).unwrap();
    assert!(
        info.contains("sync_partial_ok:1"),
        "a partial resync, as in production:\n{info}"
    );
    assert_eq!(
        status(&mut r, "after").map(|s| (s.0, s.1)),
        Some(("bob".to_string(), token))
    );
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .exec(&mut r)
        .unwrap();
    assert_eq!(
        acquire(&mut r, "after", "carol", 60_000),
        None,
        "held after promotion"
    );
}

#[test]
fn a_module_loaded_at_runtime_on_a_master_with_replicas_replicates_at_once() {
    let master = Server::builder()
        .without_module()
        .config("enable-module-command", "yes")
        .start();
    let replica = replica_of(&master);
    let mut m = master.conn();
    redis::cmd("MODULE")
        .arg("LOAD")
        .arg(dlock_testkit::module_path().to_str().expect("a UTF-8 path"))
        .exec(&mut m)
        .unwrap();
    let token = acquire(&mut m, "k", "alice", 60_000).unwrap();
    sync(&mut m);
    let mut r = replica.conn();
    assert_eq!(
        status(&mut r, "k").map(|s| (s.0, s.1)),
        Some(("alice".to_string(), token))
    );
}

/// A replica names the event of an applied effect after it: a holder gone is `dlock.release`
/// (before the one write interface, the release of a plain lock reached it as `DEL`, and for a
/// while after as an APPLY it announced as `dlock.acquire`).
#[test]
fn a_replica_announces_a_release_as_a_release() {
    let master = Server::start();
    let replica = replica_of(&master);
    let (mut m, mut r) = (master.conn(), replica.conn());
    redis::cmd("CONFIG")
        .arg(&["SET", "notify-keyspace-events", "Ed"])
        .exec(&mut r)
        .unwrap();
    let mut listener = replica.conn();
    listener
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:dlock.*").unwrap();
    acquire(&mut m, "k", "o", 60_000).unwrap();
    release(&mut m, "k", "o");
    sync(&mut m);
    let mut seen = Vec::new();
    for _ in 0..2 {
        let message = pubsub.get_message().expect("an event on the replica");
        let channel = message.get_channel_name().to_string();
        seen.push(channel.trim_start_matches("__keyevent@0__:").to_string());
    }
    assert_eq!(seen, ["dlock.acquire", "dlock.release"]);
    assert_eq!(status(&mut r, "k"), None, "gone on the replica too");
}
