//! Shared (read/write) locks and lease-bound semaphores on one node: one kind while held, every
//! holder with its own token and lease, downgrade kept and upgrade refused, and the fair queue:
//! a queued writer holds back later readers, consecutive readers are granted together, a
//! semaphore serves its head first, and a lease that ends frees its place at once.

use crate::common::group::{group_status, owners, take, try_take, Kind};
use crate::common::*;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const MIN: i64 = 60_000;

#[test]
fn readers_hold_together_with_rising_tokens_and_exclude_a_writer() {
    let server = Server::start();
    let mut c = server.conn();
    let tokens: Vec<i64> = ["a", "b", "c"]
        .iter()
        .map(|r| take(&mut c, "doc", r, MIN, Kind::Shared).expect("a reader is admitted"))
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    assert_eq!(take(&mut c, "doc", "w", MIN, Kind::Exclusive), None);
    let (kind, limit, holders, _) = group_status(&mut c, "doc").expect("held");
    assert_eq!((kind.as_str(), limit, holders.len()), ("shared", None, 3));
    assert!(holders.iter().all(|h| h.mode == "shared" && h.holds == 1));
    let type_name: String = redis::cmd("TYPE").arg("doc").query(&mut c).unwrap();
    assert_eq!(type_name, "dlockmany");
    for r in ["a", "b", "c"] {
        assert_eq!(release(&mut c, "doc", r), 1);
    }
    let writer = take(&mut c, "doc", "w", MIN, Kind::Exclusive).expect("free again");
    assert!(writer > tokens[2]);
    assert_eq!(
        take(&mut c, "doc", "r", MIN, Kind::Shared),
        None,
        "a writer excludes readers"
    );
    assert_eq!(
        status(&mut c, "doc").map(|s| s.0),
        Some("w".into()),
        "a plain lock again"
    );
}

#[test]
fn a_writer_downgrades_but_a_reader_cannot_upgrade() {
    let server = Server::start();
    let mut c = server.conn();
    let token = take(&mut c, "doc", "w", MIN, Kind::Exclusive).unwrap();
    assert_eq!(
        take(&mut c, "doc", "w", MIN, Kind::Shared),
        Some(token),
        "keeps its token"
    );
    assert_eq!(
        take(&mut c, "doc", "r", MIN, Kind::Shared),
        None,
        "still exclusive"
    );
    assert_eq!(
        release(&mut c, "doc", "w"),
        1,
        "drops the exclusive side first"
    );
    let (_, _, holders, _) = group_status(&mut c, "doc").expect("still held shared");
    assert_eq!(
        (holders[0].owner.as_str(), holders[0].mode.as_str()),
        ("w", "shared")
    );
    assert!(
        take(&mut c, "doc", "r", MIN, Kind::Shared).is_some(),
        "readers now"
    );
    let upgrade = error_of(&mut c, &["DLOCK.ACQUIRE", "doc", "r", "60000"]);
    assert!(
        upgrade.starts_with("ERR owner holds the lock shared"),
        "{upgrade}"
    );
    assert_eq!(
        owners(&mut c, "doc"),
        ["r", "w"],
        "the refusal changed nothing"
    );
}

#[test]
fn a_resource_keeps_its_kind_while_held_and_its_counter_after() {
    let server = Server::start();
    let mut c = server.conn();
    let first = take(&mut c, "res", "a", MIN, Kind::Limit(2)).unwrap();
    let cases = [
        (
            Kind::Limit(3),
            "WRONGKIND the resource is a semaphore with LIMIT 2, asked as a semaphore with LIMIT 3",
        ),
        (
            Kind::Shared,
            "WRONGKIND the resource is a semaphore with LIMIT 2, asked as a lock",
        ),
        (
            Kind::Exclusive,
            "WRONGKIND the resource is a semaphore with LIMIT 2, asked as a lock",
        ),
    ];
    for (kind, expected) in cases {
        let err = try_take(&mut c, "res", "b", MIN, kind)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&expected["WRONGKIND ".len()..]),
            "{kind:?}: {err}"
        );
        assert_eq!(
            try_take(&mut c, "res", "b", MIN, kind).unwrap_err().code(),
            Some("WRONGKIND")
        );
    }
    assert_eq!(owners(&mut c, "res"), ["a"], "refusals change nothing");
    take(&mut c, "lock", "x", MIN, Kind::Exclusive).unwrap();
    let err = try_take(&mut c, "lock", "y", MIN, Kind::Limit(2)).unwrap_err();
    assert_eq!(
        err.code(),
        Some("WRONGKIND"),
        "a plain lock is not a semaphore: {err}"
    );
    assert_eq!(release(&mut c, "res", "a"), 1);
    let again = take(&mut c, "res", "b", MIN, Kind::Limit(3)).expect("gone with its last holder");
    assert!(again > first, "tokens never repeat: {again} <= {first}");
}

#[test]
fn bad_kind_options_are_refused_before_anything_changes() {
    let server = Server::start();
    let mut c = server.conn();
    let cases: [(&[&str], &str); 4] = [
        (
            &["SHARED", "LIMIT", "2"],
            "ERR SHARED and LIMIT cannot be given together",
        ),
        (
            &["LIMIT", "0"],
            "ERR LIMIT must be an integer from 1 to 10000, got '0'",
        ),
        (
            &["LIMIT", "10001"],
            "ERR LIMIT must be an integer from 1 to 10000",
        ),
        (&["LIMIT"], "ERR option LIMIT needs a value"),
    ];
    for (options, expected) in cases {
        let mut args = vec!["DLOCK.ACQUIRE", "k", "o", "1000"];
        args.extend(options);
        let err = error_of(&mut c, &args);
        assert!(err.starts_with(expected), "{options:?}: {err}");
    }
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn a_semaphore_admits_its_limit_and_an_ended_lease_frees_its_place() {
    let server = Server::start();
    let mut c = server.conn();
    let short = take(&mut c, "pool", "short", 300, Kind::Limit(3)).unwrap();
    let a = take(&mut c, "pool", "a", MIN, Kind::Limit(3)).unwrap();
    let b = take(&mut c, "pool", "b", MIN, Kind::Limit(3)).unwrap();
    assert!(short < a && a < b, "each holder its own rising token");
    assert_eq!(take(&mut c, "pool", "c", MIN, Kind::Limit(3)), None, "full");
    assert_eq!(
        take(&mut c, "pool", "a", MIN, Kind::Limit(3)),
        Some(a),
        "a renewal keeps a place"
    );
    let expired_before = info_field(&mut c, "expired_before_release");
    thread::sleep(Duration::from_millis(400));
    assert!(
        take(&mut c, "pool", "c", MIN, Kind::Limit(3)).is_some(),
        "no leaked permit"
    );
    assert_eq!(owners(&mut c, "pool"), ["a", "b", "c"]);
    let expired = info_field(&mut c, "expired_before_release");
    assert_eq!(
        expired,
        expired_before + 1,
        "the ended lease is counted once"
    );
    assert_eq!(
        extend(&mut c, "pool", "short", MIN),
        0,
        "an ended lease never comes back"
    );
}

/// `DLOCK.ACQUIRE key owner ttl WAIT 10000 [kind]` on its own connection, once queued.
fn wait_for(server: &Server, key: &str, owner: &str, kind: Kind) -> mpsc::Receiver<Option<i64>> {
    let mut c = server.conn();
    let before = queue(server, key).len();
    let (tx, rx) = mpsc::channel();
    let (key_, owner_) = (key.to_string(), owner.to_string());
    thread::spawn(move || {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg(&key_).arg(&owner_).arg(MIN).arg("WAIT").arg(10_000);
        crate::common::group::kind_args(&mut cmd, kind);
        let _ = tx.send(cmd.query(&mut c).expect("a waited ACQUIRE"));
    });
    eventually("queued", 5_000, || queue(server, key).len() > before);
    rx
}

/// `DLOCK.WAITERS`: (owner, what it waits for) in service order.
fn queue(server: &Server, key: &str) -> Vec<(String, String)> {
    let listed: Vec<(String, Option<i64>, i64, String)> = redis::cmd("DLOCK.WAITERS")
        .arg(key)
        .query(&mut server.conn())
        .unwrap();
    listed.into_iter().map(|w| (w.0, w.3)).collect()
}

fn granted(rx: &mpsc::Receiver<Option<i64>>) -> i64 {
    rx.recv_timeout(Duration::from_secs(5))
        .expect("answered")
        .expect("granted")
}

fn waiting(rx: &mpsc::Receiver<Option<i64>>) -> bool {
    rx.recv_timeout(Duration::from_millis(100)).is_err()
}

#[test]
fn a_queued_writer_holds_back_a_stream_of_later_readers() {
    let server = Server::start();
    let mut c = server.conn();
    take(&mut c, "doc", "r1", MIN, Kind::Shared).unwrap();
    let writer = wait_for(&server, "doc", "w", Kind::Exclusive);
    assert_eq!(
        take(&mut c, "doc", "r2", MIN, Kind::Shared),
        None,
        "no barging past the writer"
    );
    let late_reader = wait_for(&server, "doc", "r3", Kind::Shared);
    assert_eq!(
        queue(&server, "doc"),
        [
            ("w".into(), "exclusive".into()),
            ("r3".into(), "shared".into())
        ]
    );
    assert_eq!(release(&mut c, "doc", "r1"), 1);
    granted(&writer);
    assert!(waiting(&late_reader), "the reader waits for the writer");
    assert_eq!(release(&mut c, "doc", "w"), 1);
    granted(&late_reader);
}

#[test]
fn consecutive_readers_at_the_head_are_granted_together_in_one_step() {
    let server = Server::start();
    let mut c = server.conn();
    take(&mut c, "doc", "w", MIN, Kind::Exclusive).unwrap();
    let readers: Vec<_> = (0..3)
        .map(|i| wait_for(&server, "doc", &format!("r{i}"), Kind::Shared))
        .collect();
    let writer = wait_for(&server, "doc", "w2", Kind::Exclusive);
    let after_writer = wait_for(&server, "doc", "r9", Kind::Shared);
    let handoffs = info_field(&mut c, "handoffs");
    assert_eq!(release(&mut c, "doc", "w"), 1);
    let tokens: Vec<i64> = readers.iter().map(granted).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "served in order: {tokens:?}"
    );
    assert_eq!(info_field(&mut c, "handoffs"), handoffs + 3);
    assert!(waiting(&writer) && waiting(&after_writer));
    for i in 0..3 {
        release(&mut c, "doc", &format!("r{i}"));
    }
    granted(&writer);
    assert!(waiting(&after_writer));
}

#[test]
fn a_semaphore_serves_its_head_when_a_lease_ends_without_polling() {
    let server = Server::start();
    let mut c = server.conn();
    take(&mut c, "pool", "a", 250, Kind::Limit(2)).unwrap();
    take(&mut c, "pool", "b", MIN, Kind::Limit(2)).unwrap();
    let first = wait_for(&server, "pool", "c", Kind::Limit(2));
    let second = wait_for(&server, "pool", "d", Kind::Limit(2));
    let started = Instant::now();
    granted(&first);
    let late = started.elapsed();
    assert!(
        late < Duration::from_millis(400),
        "handed off at the lease's end: {late:?}"
    );
    assert!(waiting(&second), "one place freed, one waiter served");
    assert_eq!(owners(&mut c, "pool"), ["b", "c"]);
    assert_eq!(release(&mut c, "pool", "b"), 1);
    granted(&second);
}

#[test]
fn a_smaller_ticket_wounds_a_tentative_permit_but_never_a_committed_one() {
    let server = Server::start();
    let mut c = server.conn();
    let acquire_ticketed = |c: &mut Connection, owner: &str, ticket: i64| -> Option<i64> {
        let mut cmd = redis::cmd("DLOCK.ACQUIRE");
        cmd.arg("pool")
            .arg(owner)
            .arg(MIN)
            .arg("WAIT")
            .arg(1)
            .arg("TICKET")
            .arg(ticket);
        cmd.arg("LIMIT").arg(1);
        cmd.query(c).unwrap()
    };
    let late = acquire_ticketed(&mut c, "late", 50).expect("free");
    let early = acquire_ticketed(&mut c, "early", 10).expect("wounds the tentative grant");
    assert!(early > late);
    assert_eq!(
        fence(&mut c, "pool", "late", early + 1),
        0,
        "the wounded holder's commit fails"
    );
    assert_eq!(fence(&mut c, "pool", "early", early), 1);
    assert_eq!(
        acquire_ticketed(&mut c, "earlier", 5),
        None,
        "a committed permit stays"
    );
    assert!(info_field(&mut c, "revocations") >= 1);
}

/// `DLOCK.ACQUIRE doc owner 60000 WAIT 1 TICKET t [kind]`.
fn ticketed(c: &mut Connection, owner: &str, ticket: i64, kind: Kind) -> Option<i64> {
    let mut cmd = redis::cmd("DLOCK.ACQUIRE");
    cmd.arg("doc")
        .arg(owner)
        .arg(MIN)
        .arg("WAIT")
        .arg(1)
        .arg("TICKET")
        .arg(ticket);
    crate::common::group::kind_args(&mut cmd, kind);
    cmd.query(c).unwrap()
}

#[test]
fn wounds_cross_between_a_tentative_writer_and_readers() {
    let server = Server::start();
    let mut c = server.conn();
    ticketed(&mut c, "writer", 50, Kind::Exclusive).expect("free");
    let reader = ticketed(&mut c, "reader", 10, Kind::Shared);
    assert!(
        reader.is_some(),
        "a smaller ticket wounds the tentative writer"
    );
    assert_eq!(owners(&mut c, "doc"), ["reader"]);
    ticketed(&mut c, "reader2", 60, Kind::Shared).expect("readers share");
    let writer = ticketed(&mut c, "writer2", 40, Kind::Exclusive);
    assert_eq!(writer, None, "reader (ticket 10) is not woundable by 40");
    let both_tentative = ticketed(&mut c, "writer3", 5, Kind::Exclusive);
    assert!(both_tentative.is_some(), "5 wounds every tentative reader");
    assert_eq!(status(&mut c, "doc").map(|s| s.0), Some("writer3".into()));
}

#[test]
fn an_owner_whose_lease_ended_takes_a_place_again() {
    let server = Server::start();
    let mut c = server.conn();
    for kind in [Kind::Limit(2), Kind::Shared] {
        redis::cmd("DEL").arg("r").exec(&mut c).unwrap();
        take(&mut c, "r", "keeper", MIN, kind).unwrap(); // keeps the key alive
        let first = take(&mut c, "r", "x", 100, kind).unwrap();
        thread::sleep(Duration::from_millis(200)); // x's lease ended; its entry is still stored
        let again = take(&mut c, "r", "x", MIN, kind).expect("a free place");
        assert!(again > first, "{kind:?}: a fresh grant, a new token");
        assert_eq!(owners(&mut c, "r"), ["keeper", "x"], "{kind:?}");
    }
}
