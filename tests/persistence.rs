//! Locks and the fencing counter survive restarts (RDB; AOF with and without the RDB preamble;
//! AOF rewrites), FLUSHALL and DEBUG RELOAD. The clock floor is off here so the counter's own
//! persistence is what is tested, not the wall clock.

use crate::common::*;

fn no_floor() -> dlock_testkit::Builder {
    Server::builder().config("dlock.clock-floor", "no")
}

fn aof(preamble: bool) -> dlock_testkit::Builder {
    no_floor()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", if preamble { "yes" } else { "no" })
}

/// Takes three locks, fences one high, releases another; returns the counter.
fn make_state(c: &mut Connection) -> i64 {
    acquire(c, "held", "alice", 60_000).unwrap();
    acquire_reentrant(c, "reentrant", "bob", 60_000).unwrap();
    acquire_reentrant(c, "reentrant", "bob", 60_000).unwrap();
    acquire(c, "gone", "carol", 60_000).unwrap();
    assert_eq!(fence(c, "held", "alice", 1_000), 1);
    assert_eq!(release(c, "gone", "carol"), 1);
    counter(c)
}

fn assert_state_survived(c: &mut Connection, counter_before: i64) {
    assert!(
        counter(c) >= counter_before,
        "counter {} < {counter_before}",
        counter(c)
    );
    let (owner, token, ttl, holds) = status(c, "held").expect("held lock survived");
    assert_eq!((owner.as_str(), token, holds), ("alice", 1_000, 1));
    assert!((50_000..=60_000).contains(&ttl), "ttl kept: {ttl}");
    assert_eq!(status(c, "reentrant").expect("reentrant survived").3, 2);
    assert_eq!(status(c, "gone"), None, "released lock stays released");
    let next = acquire(c, "new", "dave", 1_000).unwrap();
    assert!(
        next > counter_before,
        "new token {next} <= {counter_before}"
    );
}

#[test]
fn rdb_restart_keeps_locks_and_counter() {
    let mut server = no_floor().start();
    let before = make_state(&mut server.conn());
    redis::cmd("SAVE").exec(&mut server.conn()).unwrap();
    server.kill();
    server.restart();
    assert_state_survived(&mut server.conn(), before);
}

#[test]
fn aof_restart_keeps_locks_and_counter() {
    for preamble in [true, false] {
        let mut server = aof(preamble).start();
        let before = make_state(&mut server.conn());
        server.kill(); // no save: only the fsynced AOF remains
        server.restart();
        assert_state_survived(&mut server.conn(), before);
    }
}

fn rewrite_aof(c: &mut Connection) {
    redis::cmd("BGREWRITEAOF").exec(c).unwrap();
    eventually("AOF rewrite done", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        info.contains("aof_rewrite_in_progress:0") && !info.contains("aof_rewrite_scheduled:1")
    });
}

#[test]
fn aof_rewrite_keeps_locks_and_counter() {
    for preamble in [true, false] {
        let mut server = aof(preamble).start();
        let mut c = server.conn();
        let before = make_state(&mut c);
        rewrite_aof(&mut c);
        server.kill();
        server.restart();
        assert_state_survived(&mut server.conn(), before);
    }
}

#[test]
fn aof_rewrite_with_no_locks_left_keeps_the_counter() {
    // The hard case for plain AOF: the rewritten base has no lock to carry the counter.
    for preamble in [true, false] {
        let mut server = aof(preamble).start();
        let mut c = server.conn();
        acquire(&mut c, "k", "alice", 60_000).unwrap();
        fence(&mut c, "k", "alice", 5_000);
        release(&mut c, "k", "alice");
        rewrite_aof(&mut c);
        server.kill();
        server.restart();
        let mut c = server.conn();
        assert!(
            counter(&mut c) >= 5_000,
            "preamble={preamble}: counter {}",
            counter(&mut c)
        );
        assert_eq!(acquire(&mut c, "k", "bob", 1_000), Some(5_001));
    }
}

#[test]
fn flushall_keeps_the_counter_in_memory_and_on_disk() {
    let mut server = no_floor().start();
    let mut c = server.conn();
    acquire(&mut c, "k", "alice", 60_000).unwrap();
    fence(&mut c, "k", "alice", 777);
    redis::cmd("FLUSHALL").exec(&mut c).unwrap();
    assert_eq!(
        status(&mut c, "k"),
        None,
        "locks are data: FLUSHALL removes them"
    );
    assert_eq!(counter(&mut c), 777);
    assert_eq!(acquire(&mut c, "k", "bob", 60_000), Some(778));
    redis::cmd("FLUSHALL").exec(&mut c).unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap(); // an RDB with no keys at all
    server.kill();
    server.restart();
    let mut c = server.conn();
    assert_eq!(counter(&mut c), 778);
    assert_eq!(acquire(&mut c, "k", "carol", 60_000), Some(779));
}

#[test]
fn debug_reload_keeps_locks_and_counter() {
    let server = no_floor().config("enable-debug-command", "yes").start();
    let mut c = server.conn();
    let before = make_state(&mut c);
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    assert_state_survived(&mut c, before);
}

#[test]
fn a_lock_that_expires_while_the_server_is_down_is_free_after_restart() {
    let mut server = no_floor().start();
    let mut c = server.conn();
    acquire(&mut c, "short", "alice", 300).unwrap();
    redis::cmd("SAVE").exec(&mut c).unwrap();
    server.kill();
    std::thread::sleep(std::time::Duration::from_millis(400));
    server.restart();
    let mut c = server.conn();
    assert_eq!(status(&mut c, "short"), None);
    let token = acquire(&mut c, "short", "bob", 1_000).unwrap();
    assert!(token > 1, "the counter came back: token {token}");
}

#[test]
fn turning_aof_on_at_runtime_captures_locks_from_before_and_after() {
    // Before `appendonly yes` nothing receives effects (propagation.rs skips building them);
    // the rewrite that starts the AOF must still capture those locks, and later ones follow.
    let mut server = no_floor().start();
    let mut c = server.conn();
    acquire(&mut c, "before", "alice", 60_000).unwrap();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendonly")
        .arg("yes")
        .exec(&mut c)
        .unwrap();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendfsync")
        .arg("always")
        .exec(&mut c)
        .unwrap();
    eventually("AOF on", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        info.contains("aof_enabled:1") && info.contains("aof_rewrite_in_progress:0")
    });
    acquire(&mut c, "after", "bob", 60_000).unwrap();
    fence(&mut c, "after", "bob", 9_000);
    server.kill();
    // Restart with the AOF on (the config change was not written to a redis.conf).
    let mut server = Server::builder()
        .config("dlock.clock-floor", "no")
        .config("appendonly", "yes")
        .port(server.port())
        .start_in(server.into_dir());
    let mut c = server.conn();
    assert_eq!(status(&mut c, "before").unwrap().0, "alice");
    assert_eq!(status(&mut c, "after").unwrap().1, 9_000);
    assert!(counter(&mut c) >= 9_000);
    server.kill();
}
