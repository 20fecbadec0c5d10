//! `DLOCK.OBSERVE key [AFTER token [OWNER owner]] [TIMEOUT ms]`: a client learns of each change
//! of a plain lock's holder without polling. Replies, blocking and its wake-ups (release,
//! takeover, lease end, FORCERELEASE; not EXTEND), bad input, kinds, MULTI and disconnects; more
//! in tests/observe_more.rs.

use crate::common::observing::*;
use crate::common::*;

use std::time::{Duration, Instant};

#[test]
fn without_after_the_state_is_replied_at_once() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(observe(&mut c, &["res"]), None, "free");
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    let (owner, got, ttl) = observe(&mut c, &["res"]).expect("held");
    assert_eq!((owner.as_str(), got), ("alice", token));
    assert!((9_000..=10_000).contains(&ttl), "ttl {ttl}");
}

#[test]
fn after_another_token_replies_at_once() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(
        observe(&mut c, &["res", "AFTER", "7"]),
        None,
        "free, 7 seen"
    );
    let token = acquire(&mut c, "res", "alice", 10_000).unwrap();
    let seen = observe(&mut c, &["res", "AFTER", "0"]).expect("held, none seen");
    assert_eq!(seen.1, token);
    let old = (token - 1).to_string();
    let seen = observe(&mut c, &["res", "after", &old, "TIMEOUT", "5000"]).expect("held");
    assert_eq!(seen.1, token);
}

#[test]
fn a_release_wakes_the_observer_with_nil() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let rx = observer(&server, &["res", "AFTER", &token]);
    assert!(still_blocked(&rx, 100), "the same holder: blocked");
    let released = Instant::now();
    release(&mut c, "res", "alice");
    let (state, at) = answer(&rx);
    assert_eq!(state, None);
    let took = at.duration_since(released);
    assert!(took < Duration::from_millis(100), "woken after {took:?}");
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn a_takeover_wakes_the_observer_with_the_new_holder() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap();
    let rx = observer(&server, &["res", "AFTER", &token.to_string()]);
    // RELEASE and ACQUIRE in one go: the observer reads the key after both.
    let (_, new): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("DLOCK.RELEASE")
        .arg("res")
        .arg("alice")
        .cmd("DLOCK.ACQUIRE")
        .arg("res")
        .arg("bob")
        .arg(60_000)
        .query(&mut c)
        .expect("MULTI release + acquire");
    let (state, _) = answer(&rx);
    let (owner, got, _) = state.expect("the new holder");
    assert_eq!((owner.as_str(), got), ("bob", new));
    assert!(new > token);
}

#[test]
fn an_acquire_wakes_an_observer_that_saw_no_holder() {
    let server = Server::start();
    let mut c = server.conn();
    let rx = observer(&server, &["res", "AFTER", "0", "TIMEOUT", "5000"]);
    let token = acquire(&mut c, "res", "bob", 60_000).unwrap();
    let (state, _) = answer(&rx);
    assert_eq!(state.map(|h| (h.0, h.1)), Some(("bob".to_string(), token)));
}

#[test]
fn a_lease_end_wakes_the_observer_with_nil() {
    let server = Server::start();
    let mut c = server.conn();
    let acquired = Instant::now();
    let token = acquire(&mut c, "res", "alice", 300).unwrap().to_string();
    let rx = observer(&server, &["res", "AFTER", &token]);
    let (state, at) = answer(&rx);
    assert_eq!(state, None);
    let took = at.duration_since(acquired);
    assert!(
        (Duration::from_millis(290)..Duration::from_millis(360)).contains(&took),
        "woken {took:?} after a 300 ms lease was granted"
    );
}

#[test]
fn an_extend_by_the_holder_does_not_wake_until_the_timeout() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap();
    let started = Instant::now();
    let rx = observer(
        &server,
        &["res", "AFTER", &token.to_string(), "TIMEOUT", "700"],
    );
    assert_eq!(extend(&mut c, "res", "alice", 60_000), 1);
    // A reentrant renewal keeps the token: no news either.
    assert_eq!(
        acquire_reentrant(&mut c, "res", "alice", 60_000),
        Some(token)
    );
    assert!(still_blocked(&rx, 300), "EXTEND is no news");
    let (state, at) = answer(&rx);
    let (owner, got, _) = state.expect("the same holder at the timeout");
    assert_eq!((owner.as_str(), got), ("alice", token));
    assert!(at.duration_since(started) >= Duration::from_millis(650));
}

#[test]
fn the_timeout_replies_the_same_holder() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap();
    let started = Instant::now();
    let rx = observer(
        &server,
        &["res", "AFTER", &token.to_string(), "TIMEOUT", "200"],
    );
    let (state, at) = answer(&rx);
    assert_eq!(state.map(|h| h.1), Some(token));
    let took = at.duration_since(started);
    assert!(took >= Duration::from_millis(190) && took < Duration::from_secs(2));
}

#[test]
fn a_force_release_wakes_the_observer() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let rx = observer(&server, &["res", "AFTER", &token]);
    let removed: i64 = redis::cmd("DLOCK.FORCERELEASE")
        .arg("res")
        .query(&mut c)
        .unwrap();
    assert_eq!(removed, 1);
    let (state, _) = answer(&rx);
    assert_eq!(state, None);
}

#[test]
fn a_del_or_rename_of_the_key_wakes_the_observer() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let rx = observer(&server, &["res", "AFTER", &token]);
    let _: i64 = redis::cmd("DEL").arg("res").query(&mut c).unwrap();
    assert_eq!(answer(&rx).0, None);

    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let rx = observer(&server, &["res", "AFTER", &token]);
    let _: () = redis::cmd("RENAME")
        .arg("res")
        .arg("elsewhere")
        .query(&mut c)
        .unwrap();
    assert_eq!(answer(&rx).0, None, "the lock moved away");
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn an_observer_of_another_key_stays_blocked() {
    let server = Server::start();
    let mut c = server.conn();
    let a = acquire(&mut c, "a", "alice", 60_000).unwrap().to_string();
    acquire(&mut c, "b", "bob", 60_000).unwrap();
    let rx = observer(&server, &["a", "AFTER", &a, "TIMEOUT", "400"]);
    release(&mut c, "b", "bob");
    assert!(still_blocked(&rx, 200), "b's release is not a's news");
    assert_eq!(answer(&rx).0.map(|h| h.0), Some("alice".to_string()));
}

#[test]
fn bad_input_is_an_error_and_blocks_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    let cases: [(&[&str], &str); 8] = [
        (&["res", "AFTER", "-1"], "ERR AFTER must be a token"),
        (&["res", "AFTER", "abc"], "ERR AFTER must be a token"),
        (&["res", "AFTER", &token, "TIMEOUT", "-5"], "ERR TIMEOUT"),
        (
            &["res", "AFTER", &token, "TIMEOUT", "99999999999"],
            "ERR TIMEOUT",
        ),
        (&["res", "AFTER", &token, "TIMEOUT", "1.5"], "ERR TIMEOUT"),
        (
            &["res", "AFTER", &token, "SOON"],
            "ERR unknown option 'SOON'",
        ),
        (
            &["res", "AFTER", &token, "TIMEOUT"],
            "ERR option TIMEOUT needs a value",
        ),
        (
            &["res", "AFTER", &token, "AFTER", &token],
            "ERR option AFTER given more than once",
        ),
    ];
    for (args, expected) in cases {
        let mut full = vec!["DLOCK.OBSERVE"];
        full.extend_from_slice(args);
        let error = error_of(&mut c, &full);
        assert!(error.starts_with(expected), "{args:?}: {error}");
        assert_eq!(blocked_clients(&mut c), 0, "{args:?} blocked a client");
    }
    let arity = error_of(&mut c, &["DLOCK.OBSERVE"]);
    assert!(arity.contains("wrong number of arguments"), "{arity}");
}

#[test]
fn other_types_and_kinds_are_refused() {
    let server = Server::start();
    let mut c = server.conn();
    let _: () = redis::cmd("SET")
        .arg("plain")
        .arg("x")
        .query(&mut c)
        .unwrap();
    let error = error_of(&mut c, &["DLOCK.OBSERVE", "plain"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    let error = error_of(&mut c, &["DLOCK.OBSERVE", "plain", "AFTER", "0"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");

    let shared = |c: &mut Connection, owner: &str, more: &[&str]| -> i64 {
        redis::cmd("DLOCK.ACQUIRE")
            .arg("rw")
            .arg(owner)
            .arg(60_000)
            .arg(more)
            .query(c)
            .expect("DLOCK.ACQUIRE SHARED")
    };
    shared(&mut c, "r1", &["SHARED"]);
    shared(&mut c, "r2", &["SHARED"]);
    let error = error_of(&mut c, &["DLOCK.OBSERVE", "rw", "AFTER", "0"]);
    assert!(
        error.starts_with("WRONGKIND the resource is a lock held shared"),
        "{error}"
    );
    redis::cmd("DLOCK.ACQUIRE")
        .arg(&["sem", "p1", "60000", "LIMIT", "3"])
        .exec(&mut c)
        .unwrap();
    let error = error_of(&mut c, &["DLOCK.OBSERVE", "sem"]);
    assert!(
        error.starts_with("WRONGKIND the resource is a semaphore with LIMIT 3"),
        "{error}"
    );
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn inside_multi_it_never_blocks() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap();
    let (same, free): (Value, Value) = redis::pipe()
        .atomic()
        .cmd("DLOCK.OBSERVE")
        .arg(&["res", "AFTER", &token.to_string()])
        .cmd("DLOCK.OBSERVE")
        .arg(&["nothing", "AFTER", "0"])
        .query(&mut c)
        .expect("MULTI ... EXEC");
    assert_eq!(
        holder(&same).map(|h| h.1),
        Some(token),
        "the unchanged state"
    );
    assert_eq!(holder(&free), None);
    let script = "return redis.call('DLOCK.OBSERVE', KEYS[1], 'AFTER', ARGV[1])";
    let from_lua: Value = redis::cmd("EVAL")
        .arg(&[script, "1", "res", &token.to_string()])
        .query(&mut c)
        .expect("EVAL");
    assert_eq!(holder(&from_lua).map(|h| h.1), Some(token));
}

#[test]
fn a_blocked_client_that_disconnects_leaves_the_server_fine() {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "res", "alice", 60_000).unwrap().to_string();
    // A bare socket: the command sent, the reply never read.
    let mut gone = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    let command = redis::cmd("DLOCK.OBSERVE")
        .arg(&["res", "AFTER", &token, "TIMEOUT", "0"])
        .get_packed_command();
    std::io::Write::write_all(&mut gone, &command).unwrap();
    eventually("observer blocked", 5_000, || blocked_clients(&mut c) == 1);
    drop(gone);
    eventually("observer gone", 5_000, || blocked_clients(&mut c) == 0);
    release(&mut c, "res", "alice");
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    server.assert_no_crash();
}
