//! Fair waiting on one node: `DLOCK.ACQUIRE ... WAIT` parks the caller in a per-key queue and
//! the freed lock goes to the first waiter (by arrival, or by ticket) in the same step.

use crate::common::*;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

type Reply = redis::RedisResult<Option<i64>>;

/// Starts `DLOCK.ACQUIRE key owner ttl WAIT timeout [TICKET t]` on its own connection and waits
/// until it is queued; the reply arrives on the returned channel.
fn wait_for(
    server: &Server,
    key: &str,
    owner: &str,
    timeout_ms: i64,
    ticket: Option<i64>,
) -> mpsc::Receiver<Reply> {
    let mut c = server.conn();
    let before = waiters(&mut server.conn(), key).len();
    let (tx, rx) = mpsc::channel();
    let (key_, owner_) = (key.to_string(), owner.to_string());
    thread::spawn(move || {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg(&key_)
            .arg(&owner_)
            .arg(60_000)
            .arg("WAIT")
            .arg(timeout_ms);
        if let Some(t) = ticket {
            cmd.arg("TICKET").arg(t);
        }
        let _ = tx.send(cmd.query(&mut c));
    });
    let mut probe = server.conn();
    eventually("queued", 5_000, || waiters(&mut probe, key).len() > before);
    rx
}

/// `DLOCK.WAITERS key`: (owner, ticket, ms waited) in service order (each waiter's fourth
/// field, what it waits for, is always `exclusive` here).
fn waiters(c: &mut Connection, key: &str) -> Vec<(String, Option<i64>, i64)> {
    let listed: Vec<(String, Option<i64>, i64, String)> = redis::cmd("DLOCK.WAITERS")
        .arg(key)
        .query(c)
        .expect("DLOCK.WAITERS");
    assert!(listed.iter().all(|w| w.3 == "exclusive"), "{listed:?}");
    listed.into_iter().map(|(o, t, ms, _)| (o, t, ms)).collect()
}

fn answer(rx: &mpsc::Receiver<Reply>) -> Reply {
    rx.recv_timeout(Duration::from_secs(10)).expect("a reply")
}

fn still_waiting(rx: &mpsc::Receiver<Reply>) -> bool {
    rx.recv_timeout(Duration::from_millis(100)).is_err()
}

#[test]
fn waiters_are_served_in_arrival_order_one_per_release_with_rising_tokens() {
    let server = Server::start();
    let mut c = server.conn();
    let first = acquire(&mut c, "res", "a", 60_000).unwrap();
    let b = wait_for(&server, "res", "b", 0, None);
    let cc = wait_for(&server, "res", "c", 0, None);
    let d = wait_for(&server, "res", "d", 0, None);
    let order: Vec<String> = waiters(&mut c, "res").into_iter().map(|w| w.0).collect();
    assert_eq!(order, ["b", "c", "d"]);

    release(&mut c, "res", "a");
    let tb = answer(&b).unwrap().expect("b granted");
    assert!(tb > first);
    assert!(
        still_waiting(&cc) && still_waiting(&d),
        "one wake per release"
    );
    assert_eq!(status(&mut c, "res").unwrap().0, "b");

    release(&mut c, "res", "b");
    let tc = answer(&cc).unwrap().expect("c granted");
    assert!(tc > tb && still_waiting(&d));
    release(&mut c, "res", "c");
    assert!(answer(&d).unwrap().expect("d granted") > tc);
    assert!(waiters(&mut c, "res").is_empty());
    assert_eq!(info_field(&mut c, "handoffs"), 3);
}

#[test]
fn forcerelease_del_and_flushall_hand_the_lock_over() {
    let server = Server::start();
    let mut c = server.conn();
    for (i, free) in ["FORCERELEASE", "DEL", "UNLINK", "FLUSHALL"]
        .iter()
        .enumerate()
    {
        let key = format!("k{i}");
        acquire(&mut c, &key, "holder", 60_000).unwrap();
        let w = wait_for(&server, &key, "next", 0, None);
        match *free {
            "FORCERELEASE" => redis::cmd("DLOCK.FORCERELEASE")
                .arg(&key)
                .query::<i64>(&mut c),
            "FLUSHALL" => redis::cmd("FLUSHALL").query::<()>(&mut c).map(|_| 1),
            other => redis::cmd(other).arg(&key).query::<i64>(&mut c),
        }
        .unwrap();
        assert!(answer(&w).unwrap().is_some(), "granted after {free}");
        assert_eq!(status(&mut c, &key).unwrap().0, "next", "after {free}");
    }
}

#[test]
fn an_expiring_holder_hands_over_at_its_deadline_without_any_client_touching_the_key() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "crashed", 300).unwrap();
    let deadline = Instant::now() + Duration::from_millis(300);
    let w = wait_for(&server, "res", "next", 0, None);
    assert!(answer(&w).unwrap().is_some());
    let late = Instant::now().saturating_duration_since(deadline);
    assert!(
        Instant::now() >= deadline - Duration::from_millis(5),
        "not before the deadline"
    );
    assert!(
        late < Duration::from_millis(200),
        "handed over {late:?} after the deadline"
    );
}

#[test]
fn a_permit_whose_lease_is_shortened_hands_over_when_it_really_ends() {
    let server = Server::start();
    let mut c = server.conn();
    let permit = |c: &mut Connection, owner: &str| -> Option<i64> {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg("pool").arg(owner).arg(60_000).arg("LIMIT").arg(2);
        cmd.query(c).unwrap()
    };
    for shorten in ["EXTEND", "FENCE"] {
        redis::cmd("DEL").arg("pool").exec(&mut c).unwrap();
        let token = permit(&mut c, "a").unwrap();
        permit(&mut c, "b").unwrap(); // keeps the key alive: only the timer can notice
        let (tx, rx) = mpsc::channel();
        let mut w = server.conn();
        thread::spawn(move || {
            let mut cmd = redis::cmd("DLOCK.ACQUIRE");
            cmd.arg("pool").arg("c").arg(60_000);
            let reply: Reply = cmd.arg("WAIT").arg(0).arg("LIMIT").arg(2).query(&mut w);
            let _ = tx.send(reply);
        });
        let mut probe = server.conn();
        eventually("queued", 5_000, || {
            dlock_testkit::waiters(&server, "pool") == 1
        });
        let shortened: i64 = match shorten {
            "EXTEND" => extend(&mut c, "pool", "a", 200),
            _ => redis::cmd("DLOCK.FENCE")
                .arg("pool")
                .arg("a")
                .arg(token)
                .arg("PX")
                .arg(200)
                .query(&mut probe)
                .unwrap(),
        };
        assert_eq!(shortened, 1);
        // The waiter's timer was set for the first lease end, a minute away: it has to follow.
        let granted = rx.recv_timeout(Duration::from_secs(3));
        assert!(
            matches!(granted, Ok(Ok(Some(_)))),
            "{shorten}: not granted when a's lease ended: {granted:?}"
        );
        redis::cmd("DLOCK.FORCERELEASE")
            .arg("pool")
            .exec(&mut c)
            .unwrap();
    }
}

#[test]
fn a_wait_times_out_with_nil_and_leaves_the_queue() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "a", 60_000).unwrap();
    let w = wait_for(&server, "res", "b", 200, None);
    assert_eq!(answer(&w).unwrap(), None);
    assert!(waiters(&mut c, "res").is_empty());
    assert_eq!(info_field(&mut c, "wait_timeouts"), 1);
    assert_eq!(
        info_field(&mut c, "waiters"),
        0,
        "the total follows the queues"
    );
    release(&mut c, "res", "a");
    assert!(status(&mut c, "res").is_none(), "nobody was granted");
}

#[test]
fn disconnect_and_release_by_the_waiter_withdraw_its_wait() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "a", 60_000).unwrap();
    {
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        use std::io::Write;
        raw.write_all(b"*6\r\n$13\r\nDLOCK.ACQUIRE\r\n$3\r\nres\r\n$4\r\ngone\r\n$5\r\n60000\r\n$4\r\nWAIT\r\n$1\r\n0\r\n").unwrap();
        eventually("queued", 5_000, || waiters(&mut c, "res").len() == 1);
    }
    eventually("disconnected waiter left", 5_000, || {
        waiters(&mut c, "res").is_empty()
    });

    let w = wait_for(&server, "res", "cancels", 0, None);
    assert_eq!(release(&mut c, "res", "cancels"), 0, "it held nothing");
    assert_eq!(answer(&w).unwrap(), None, "the cancelled wait answers nil");
    assert!(waiters(&mut c, "res").is_empty());
    release(&mut c, "res", "a");
    assert!(status(&mut c, "res").is_none());
}

#[test]
fn multi_and_scripts_never_block() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "a", 60_000).unwrap();
    let (in_multi,): (Option<i64>,) = redis::pipe()
        .atomic()
        .cmd("DLOCK.ACQUIRE")
        .arg("res")
        .arg("b")
        .arg(1000)
        .arg("WAIT")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(in_multi, None);
    let in_script: Option<i64> = redis::cmd("EVAL")
        .arg("return redis.call('DLOCK.ACQUIRE', KEYS[1], 'b', 1000, 'WAIT', 0)")
        .arg(1)
        .arg("res")
        .query(&mut c)
        .unwrap();
    assert_eq!(in_script, None);
    assert!(waiters(&mut c, "res").is_empty());
}

#[test]
fn tickets_are_served_smallest_first_and_a_smaller_ticket_wounds_a_tentative_grant() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "res", "x", 60_000).unwrap();
    let late = wait_for(&server, "res", "t30", 0, Some(30));
    let early = wait_for(&server, "res", "t20", 0, Some(20));
    let tickets: Vec<Option<i64>> = waiters(&mut c, "res").into_iter().map(|w| w.1).collect();
    assert_eq!(
        tickets,
        [Some(20), Some(30)],
        "served by ticket, not arrival"
    );
    release(&mut c, "res", "x");
    let t20 = answer(&early).unwrap().expect("ticket 20 first");
    assert!(still_waiting(&late));

    // Ticket 10 arrives while ticket 20's grant is uncommitted: it takes the lock at once.
    let t10: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
        .arg("res")
        .arg("t10")
        .arg(60_000)
        .arg("WAIT")
        .arg(0)
        .arg("TICKET")
        .arg(10)
        .query(&mut c)
        .unwrap();
    let t10 = t10.expect("wounds the tentative grant");
    assert!(t10 > t20);
    assert_eq!(
        fence(&mut c, "res", "t20", t20),
        0,
        "the wounded owner learns it at FENCE"
    );
    assert_eq!(fence(&mut c, "res", "t10", t10), 1);
    assert_eq!(info_field(&mut c, "revocations"), 1);

    // Committed: a smaller ticket now waits instead of wounding.
    let t5 = wait_for(&server, "res", "t5", 0, Some(5));
    assert!(still_waiting(&t5));
    release(&mut c, "res", "t10");
    assert!(answer(&t5).unwrap().is_some(), "ticket 5 before ticket 30");
    assert!(still_waiting(&late));
}

#[test]
fn a_replica_sees_the_handed_over_lock_and_a_demoted_master_unblocks_its_waiters() {
    let master = Server::start();
    let replica = replica_of(&master);
    let (mut m, mut r) = (master.conn(), replica.conn());
    acquire(&mut m, "res", "a", 60_000).unwrap();
    let w = wait_for(&master, "res", "b", 0, None);
    release(&mut m, "res", "a");
    let token = answer(&w).unwrap().unwrap();
    sync(&mut m);
    let (owner, got, _, _) = status(&mut r, "res").expect("replicated");
    assert_eq!((owner.as_str(), got), ("b", token));

    let w = wait_for(&master, "res", "c", 0, None);
    let other = Server::start();
    redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(other.port())
        .query::<()>(&mut m)
        .unwrap();
    let err = answer(&w).expect_err("demotion ends the wait");
    assert!(err.to_string().contains("UNBLOCKED"), "{err}");
}

#[test]
fn bad_wait_options_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let cases: &[&[&str]] = &[
        &["WAIT"],
        &["WAIT", "-1"],
        &["WAIT", "soon"],
        &["WAIT", "10", "WAIT", "10"],
        &["WAIT", "10", "TICKET"],
        &["WAIT", "10", "TICKET", "0"],
        &["WAIT", "10", "TICKET", "-5"],
        &["TICKET", "5"],
    ];
    for case in cases {
        let got: redis::RedisResult<Option<i64>> = redis::cmd("DLOCK.ACQUIRE")
            .arg("res")
            .arg("a")
            .arg(1000)
            .arg(*case)
            .query(&mut c);
        let err = got.expect_err(&format!("{case:?} refused"));
        let named = ["WAIT", "TICKET"]
            .iter()
            .any(|o| err.to_string().contains(o));
        assert!(named, "{case:?}: the error names the option: {err}");
        assert!(status(&mut c, "res").is_none(), "{case:?} changed nothing");
    }
}

#[test]
fn max_waiters_bounds_a_queue_with_an_error_and_status_counts_them() {
    let server = Server::start();
    let mut c = server.conn();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("dlock.max-waiters")
        .arg(1)
        .query::<()>(&mut c)
        .unwrap();
    acquire(&mut c, "res", "a", 60_000).unwrap();
    let _w = wait_for(&server, "res", "b", 0, None);
    let err = redis::cmd("DLOCK.ACQUIRE")
        .arg("res")
        .arg("c")
        .arg(1000)
        .arg("WAIT")
        .arg(0)
        .query::<Option<i64>>(&mut c)
        .expect_err("over the limit");
    assert!(err.to_string().contains("dlock.max-waiters"), "{err}");
    let fields: std::collections::HashMap<String, redis::Value> =
        redis::cmd("DLOCK.STATUS").arg("res").query(&mut c).unwrap();
    assert_eq!(fields.get("waiters"), Some(&redis::Value::Int(1)));
    assert_eq!(info_field(&mut c, "waiters"), 1);
}

#[test]
fn an_expiry_handoff_during_client_pause_waits_for_writes_and_keeps_the_server_up() {
    let master = Server::builder().config("appendonly", "yes").start();
    let replica = replica_of(&master);
    let (mut m, mut r) = (master.conn(), replica.conn());
    acquire(&mut m, "res", "crashed", 200).unwrap();
    let w = wait_for(&master, "res", "next", 0, None);
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(700)
        .arg("WRITE")
        .query::<()>(&mut m)
        .unwrap();
    let paused_at = Instant::now();
    let token = answer(&w).unwrap().expect("granted once writes resume");
    assert!(
        paused_at.elapsed() >= Duration::from_millis(650),
        "not granted during the pause"
    );
    master.assert_no_crash();
    sync(&mut m);
    assert_eq!(
        status(&mut r, "res").map(|s| (s.0, s.1)),
        Some(("next".into(), token))
    );
}

#[test]
fn a_waiter_waits_out_the_restart_quarantine() {
    let server = Server::builder()
        .module_args(["quarantine-ms", "1500"])
        .start();
    let mut c = server.conn();
    let started = Instant::now();
    let granted: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
        .arg("res")
        .arg("a")
        .arg(10_000)
        .arg("WAIT")
        .arg(0)
        .query(&mut c)
        .expect("waits instead of TRYAGAIN");
    assert!(granted.is_some());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "granted only after the quarantine"
    );
}
