//! Observers for the DLOCK.OBSERVE tests: a blocked observer on its own connection and its
//! answer.
#![allow(dead_code)]

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::{eventually, Connection, Server, Value};

/// An observer's reply and when it arrived.
pub type Answer = (redis::RedisResult<Value>, Instant);

/// `(owner, token, ttl)` out of an OBSERVE reply (RESP2 pairs), `None` for nil.
pub fn holder(reply: &Value) -> Option<(String, i64, i64)> {
    let fields = match reply {
        Value::Nil => return None,
        Value::Array(fields) => fields,
        other => panic!("expected nil or pairs, got {other:?}"),
    };
    let text = |v: &Value| -> String { redis::from_redis_value_ref(v).expect("string field") };
    let int = |v: &Value| -> i64 { redis::from_redis_value_ref(v).expect("integer field") };
    let names: Vec<String> = fields.iter().step_by(2).map(text).collect();
    assert_eq!(names, ["owner", "token", "ttl"], "OBSERVE field order");
    Some((text(&fields[1]), int(&fields[3]), int(&fields[5])))
}

pub fn observe(c: &mut Connection, args: &[&str]) -> Option<(String, i64, i64)> {
    let reply: Value = redis::cmd("DLOCK.OBSERVE")
        .arg(args)
        .query(c)
        .unwrap_or_else(|e| panic!("DLOCK.OBSERVE {args:?}: {e}"));
    holder(&reply)
}

pub fn blocked_clients(c: &mut Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("blocked_clients in INFO clients")
}

/// Starts `DLOCK.OBSERVE args` on its own connection and waits until it is blocked.
pub fn observer(server: &Server, args: &[&str]) -> mpsc::Receiver<Answer> {
    let mut probe = server.conn();
    let before = blocked_clients(&mut probe);
    let rx = start(server, args);
    eventually("observer blocked", 5_000, || {
        blocked_clients(&mut probe) > before
    });
    rx
}

pub fn start(server: &Server, args: &[&str]) -> mpsc::Receiver<Answer> {
    let mut c = server.conn();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let reply = redis::cmd("DLOCK.OBSERVE").arg(&args).query(&mut c);
        let _ = tx.send((reply, Instant::now()));
    });
    rx
}

pub fn answer(rx: &mpsc::Receiver<Answer>) -> (Option<(String, i64, i64)>, Instant) {
    let (reply, at) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("an answer within 10 s");
    (holder(&reply.expect("no error")), at)
}

pub fn still_blocked(rx: &mpsc::Receiver<Answer>, ms: u64) -> bool {
    rx.recv_timeout(Duration::from_millis(ms)).is_err()
}
