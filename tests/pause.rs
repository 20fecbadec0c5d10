//! Forks while writes are paused. CLIENT PAUSE, SHUTDOWN and FAILOVER pause writes; a module
//! that replicates anything then aborts Redis (`propagatePendingCommands` asserts). The counter
//! write that follows every fork waits for writes to flow again, and still reaches a plain-AOF
//! rewrite.

use crate::common::*;

use std::time::Duration;

fn cmd(c: &mut Connection, args: &[&str]) {
    let mut command = redis::cmd(args[0]);
    command.arg(&args[1..]);
    command.exec(c).unwrap_or_else(|e| panic!("{args:?}: {e}"));
}

fn wait_no_child(c: &mut Connection) {
    eventually("no fork child left", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        info.contains("rdb_bgsave_in_progress:0")
            && info.contains("aof_rewrite_in_progress:0")
            && !info.contains("aof_rewrite_scheduled:1")
    });
}

/// Alive, no assertion in the log, and answering again once the pause is over.
fn assert_survived(server: &Server) {
    let mut c = server.conn();
    eventually("the pause is over", 10_000, || {
        redis::cmd("DLOCK.COUNTER").query::<i64>(&mut c).is_ok()
    });
    server.assert_no_crash();
}

#[test]
fn bgsave_during_a_write_pause_with_aof_on() {
    let server = Server::builder().config("appendonly", "yes").start();
    let mut c = server.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    cmd(&mut c, &["CLIENT", "PAUSE", "1500", "WRITE"]);
    cmd(&mut c, &["BGSAVE"]);
    std::thread::sleep(Duration::from_millis(300)); // the old timer fired here and aborted
    assert_survived(&server);
}

#[test]
fn bgrewriteaof_during_a_pause_still_carries_the_counter_into_a_plain_aof() {
    let mut server = Server::builder()
        .config("dlock.clock-floor", "no")
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no")
        .start();
    let mut c = server.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    fence(&mut c, "k", "o", 5_000);
    release(&mut c, "k", "o"); // no lock left: only the counter write carries 5000
    wait_no_child(&mut c);
    cmd(&mut c, &["CLIENT", "PAUSE", "1000", "WRITE"]);
    cmd(&mut c, &["BGREWRITEAOF"]); // not a write: it runs during the pause and forks
    std::thread::sleep(Duration::from_millis(300));
    assert_survived(&server);
    wait_no_child(&mut c);
    cmd(&mut c, &["SET", "after-the-pause", "1"]); // a write: it waits for the pause to end
    std::thread::sleep(Duration::from_millis(100)); // the deferred counter write retries every 10 ms
    server.kill();
    server.restart();
    assert_eq!(
        counter(&mut server.conn()),
        5_000,
        "the counter survived the plain rewrite"
    );
}

#[test]
fn automatic_snapshot_during_client_pause_all() {
    let server = Server::builder()
        .config("save", "1 1")
        .config("appendonly", "yes")
        .start();
    let mut c = server.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    cmd(&mut c, &["CLIENT", "PAUSE", "2500", "ALL"]);
    // serverCron forks for `save 1 1` within about a second, during the pause.
    std::thread::sleep(Duration::from_millis(2_000));
    assert_survived(&server);
}

#[test]
fn a_first_replica_syncing_during_a_write_pause() {
    let master = Server::start();
    let mut c = master.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    cmd(&mut c, &["CLIENT", "PAUSE", "2000", "WRITE"]);
    let replica = Server::builder()
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start(); // its full sync forks on the paused master
    std::thread::sleep(Duration::from_millis(500));
    assert_survived(&master);
    let mut r = replica.conn();
    eventually("the replica has the lock", 10_000, || {
        status(&mut r, "k").is_some()
    });
}

#[test]
fn a_replica_with_aof_rewriting_during_a_pause() {
    let master = Server::start();
    let replica = Server::builder()
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .config("appendonly", "yes")
        .start();
    let mut c = master.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    let mut r = replica.conn();
    eventually("in sync", 10_000, || status(&mut r, "k").is_some());
    wait_no_child(&mut r);
    cmd(&mut r, &["CLIENT", "PAUSE", "1500", "WRITE"]);
    cmd(&mut r, &["BGREWRITEAOF"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_survived(&replica);
}

#[test]
fn shutdown_waiting_for_a_lagging_replica_while_another_syncs() {
    let mut master = Server::builder().config("shutdown-timeout", "3").start();
    let lagging = Server::builder()
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start();
    let mut c = master.conn();
    acquire(&mut c, "k", "o", 60_000).unwrap();
    let mut l = lagging.conn();
    eventually("in sync", 10_000, || status(&mut l, "k").is_some());
    lagging.pause(); // SIGSTOP: it stops acknowledging
    acquire(&mut c, "k2", "o", 60_000).unwrap();
    // SHUTDOWN pauses writes and waits (up to shutdown-timeout) for the replica to catch up.
    let url = master.url();
    let shutdown = std::thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let _ = redis::cmd("SHUTDOWN").exec(&mut c);
    });
    std::thread::sleep(Duration::from_millis(300));
    let second = Server::builder()
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start(); // its full sync forks while SHUTDOWN has writes paused
    std::thread::sleep(Duration::from_millis(500));
    let _ = shutdown.join();
    let status = master
        .wait_exit(Duration::from_secs(15))
        .expect("the master shut down");
    lagging.resume();
    assert!(
        status.success(),
        "a clean shutdown, not an abort: {status:?}\n{}",
        master.log_tail()
    );
    master.assert_no_crash();
    drop(second);
}
