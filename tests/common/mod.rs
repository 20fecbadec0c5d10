//! Helpers shared by the integration tests: typed wrappers over the DLOCK.* commands.
#![allow(dead_code)]

pub mod dump;
pub mod group;
pub mod observing;

pub use dlock_testkit::Server;
pub use redis::{Connection, Value};

pub fn acquire(c: &mut Connection, key: &str, owner: &str, ttl_ms: i64) -> Option<i64> {
    redis::cmd("DLOCK.ACQUIRE")
        .arg(key)
        .arg(owner)
        .arg(ttl_ms)
        .query(c)
        .unwrap_or_else(|e| panic!("DLOCK.ACQUIRE {key} {owner} {ttl_ms}: {e}"))
}

pub fn acquire_reentrant(c: &mut Connection, key: &str, owner: &str, ttl_ms: i64) -> Option<i64> {
    redis::cmd("DLOCK.ACQUIRE")
        .arg(key)
        .arg(owner)
        .arg(ttl_ms)
        .arg("REENTRANT")
        .query(c)
        .expect("DLOCK.ACQUIRE REENTRANT")
}

pub fn release(c: &mut Connection, key: &str, owner: &str) -> i64 {
    redis::cmd("DLOCK.RELEASE")
        .arg(key)
        .arg(owner)
        .query(c)
        .expect("DLOCK.RELEASE")
}

pub fn extend(c: &mut Connection, key: &str, owner: &str, ttl_ms: i64) -> i64 {
    redis::cmd("DLOCK.EXTEND")
        .arg(key)
        .arg(owner)
        .arg(ttl_ms)
        .query(c)
        .expect("DLOCK.EXTEND")
}

pub fn fence(c: &mut Connection, key: &str, owner: &str, token: i64) -> i64 {
    redis::cmd("DLOCK.FENCE")
        .arg(key)
        .arg(owner)
        .arg(token)
        .query(c)
        .expect("DLOCK.FENCE")
}

pub fn counter(c: &mut Connection) -> i64 {
    redis::cmd("DLOCK.COUNTER").query(c).expect("DLOCK.COUNTER")
}

pub fn pttl(c: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(c).expect("PTTL")
}

/// `DLOCK.STATUS` as (owner, token, ttl, holds), `None` when free.
pub fn status(c: &mut Connection, key: &str) -> Option<(String, i64, i64, i64)> {
    let reply: Option<Vec<Value>> = redis::cmd("DLOCK.STATUS")
        .arg(key)
        .query(c)
        .expect("DLOCK.STATUS");
    let fields = reply?;
    let text = |v: &Value| -> String { redis::from_redis_value_ref(v).expect("string field") };
    let int = |v: &Value| -> i64 { redis::from_redis_value_ref(v).expect("integer field") };
    let names: Vec<String> = fields.iter().step_by(2).map(text).collect();
    assert_eq!(
        names,
        ["owner", "token", "ttl", "holds", "waiters"],
        "STATUS field order"
    );
    Some((
        text(&fields[1]),
        int(&fields[3]),
        int(&fields[5]),
        int(&fields[7]),
    ))
}

/// Runs a command expected to fail and returns its error text (code included).
pub fn error_of(c: &mut Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Ok(v) => panic!("{args:?} succeeded with {v:?}, expected an error"),
        Err(e) => {
            let code = e.code().unwrap_or("").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// One `INFO dlock` field as an integer.
pub fn info_field(c: &mut Connection, field: &str) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("dlock")
        .query(c)
        .expect("INFO dlock");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("dlock_{field}:")))
        .unwrap_or_else(|| panic!("dlock_{field} missing from INFO dlock:\n{info}"))
        .trim()
        .parse()
        .expect("integer INFO field")
}

/// Waits (bounded) until `check` holds, polling every 20 ms.
pub fn eventually(what: &str, timeout_ms: u64, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {timeout_ms} ms waiting for: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Redis 8+ hides the module's effect commands (DLOCK.APPLY, DLOCK.RAISE) from clients.
pub fn effects_are_internal(c: &mut Connection) -> bool {
    let info: Vec<Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("dlock.apply")
        .query(c)
        .expect("COMMAND INFO");
    matches!(info.first(), Some(Value::Nil) | None)
}

/// A replica of `master`, with its link up.
pub fn replica_of(master: &Server) -> Server {
    replica_built(master, Server::builder())
}

/// A replica of `master` started from `builder`, with its link up.
pub fn replica_built(master: &Server, builder: dlock_testkit::Builder) -> Server {
    let replica = builder
        .config("replicaof", &format!("127.0.0.1 {}", master.port()))
        .start();
    let mut c = replica.conn();
    eventually("replica link up", 10_000, || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap();
        info.contains("master_link_status:up")
    });
    replica
}

/// Waits until the replica has everything the master wrote so far.
pub fn sync(master: &mut Connection) {
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5_000).query(master).unwrap();
    assert_eq!(acked, 1, "replica acknowledged");
}

/// A minute from now, in unix ms: a deadline any node would grant (within `dlock.max-ttl-ms`).
pub fn soon_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_millis() as u64) + 60_000
}

/// `DLOCK.CHECK gate token`: whether a GUARD with `token` would pass.
pub fn check_gate(c: &mut Connection, gate: &str, token: u64) -> bool {
    redis::cmd("DLOCK.CHECK")
        .arg(gate)
        .arg(token)
        .query::<i64>(c)
        .expect("DLOCK.CHECK")
        == 1
}

/// The token a gate stands at (the lowest CHECK admits), 0 when there is none.
pub fn gate_token(c: &mut Connection, gate: &str) -> u64 {
    if check_gate(c, gate, 1) {
        return 0;
    }
    let (mut low, mut high) = (1u64, dlock_core::MAX_TOKEN); // refused at low, admitted at high
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        match check_gate(c, gate, mid) {
            true => high = mid,
            false => low = mid,
        }
    }
    high
}

/// Whether the module hears keyspace notifications on this server: everywhere but Valkey 8,
/// which would switch a client's database on MOVE if a module listened (docs/compatibility.md).
/// Where it does not, a TTL set on a gate stays and an evicted gate stays gone.
pub fn gates_watched(c: &mut Connection) -> bool {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(c)
        .expect("INFO server");
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_string())
    };
    let valkey_8 = field("server_name").as_deref() == Some("valkey")
        && field("valkey_version").is_some_and(|v| v.starts_with("8."));
    !valkey_8
}
