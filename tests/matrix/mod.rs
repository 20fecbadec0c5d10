//! The hardening matrix: every dlock key type × every server operation that can touch a key, as
//! a table (`ops.rs`, one row per operation; a new key type is one more [`Kind`]). Each row starts
//! a master with a replica, puts one of each kind in db 0 — a plain lock with a queued waiter and
//! a blocked observer, a shared lock (a holder table) with a set waiting on it and a free key
//! (docs/multi.md) and an exclusive waiter behind the set, a gate — applies
//! the operation to all of them, then asserts:
//!
//! - the counter never went down, and stands at least at every gate's token (every grant made
//!   before is below the counter recorded then);
//! - a gate never lowers: where the operation left it (its new key or database), it stands at
//!   least where it stood, unless the operation is a reset (DEL, UNLINK, a flush, an overwrite);
//! - a fresh grant's token is above every gate and the old counter;
//! - a lock never outlives its deadline: once it passed, another owner takes the key;
//! - every waiter and observer is answered (a reply, or its connection closed by a restart):
//!   within a second of the operation when it ended the locks (moved, deleted, flushed, expired,
//!   overwritten), else within a second of the lease's end — never at its own timeout;
//! - the replica ends with the master's `DEBUG DIGEST`.

mod ops;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;

/// Every lease of the setup: long enough that a waiter answered only at the lease's end is told
/// apart from one answered because the operation ended the lock.
pub const LEASE: Duration = Duration::from_millis(2_500);
/// How long after the operation that ended the locks (or after the lease's end, for one that
/// left them alone) every waiter and observer must be answered.
const ANSWERED_WITHIN: Duration = Duration::from_millis(1_000);

/// The dlock key types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `dlocklock`: one exclusive holder.
    Lock,
    /// `dlockmany`: two shared holders.
    Table,
    /// `dlockgate`.
    Gate,
}

pub const KINDS: [Kind; 3] = [Kind::Lock, Kind::Table, Kind::Gate];

impl Kind {
    pub fn key(self) -> &'static str {
        match self {
            Kind::Lock => "m:lock",
            Kind::Table => "m:table",
            Kind::Gate => "m:gate",
        }
    }
}

/// Where the operation left the keys, and which server holds them now.
pub struct After {
    /// Database and key name of each kind's value now; `None`: reset (deleted, flushed,
    /// overwritten), which a gate may be.
    pub at: Vec<(Kind, Option<(i64, String)>)>,
    /// The server to check: the master, or where the keys went (MIGRATE, a promoted replica).
    pub checked: Checked,
    /// The operation ended the setup's locks where their waiters wait.
    pub ends_locks: bool,
}

pub enum Checked {
    Master,
    Target(Server),
    Replica,
}

impl After {
    /// Each kind where it was (the operation moved nothing).
    pub fn in_place() -> After {
        After::each(|kind| Some((0, kind.key().to_string())))
    }
    /// Every kind reset.
    pub fn reset() -> After {
        After::each(|_| None)
    }
    /// Each kind where `at` says: moved away or reset, the locks ended where they were.
    pub fn each(at: impl Fn(Kind) -> Option<(i64, String)>) -> After {
        let at: Vec<_> = KINDS.iter().map(|&k| (k, at(k))).collect();
        let home = |k: Kind| Some((0, k.key().to_string()));
        let ends_locks = at.iter().any(|(k, at)| *k != Kind::Gate && *at != home(*k));
        After {
            at,
            checked: Checked::Master,
            ends_locks,
        }
    }
    /// In place, but every waiter is answered at once: the locks' keys expired, or left for
    /// another server, or the server restarted (their connections closed).
    pub fn answered_now() -> After {
        After {
            ends_locks: true,
            ..After::in_place()
        }
    }
}

/// One row's servers, the state recorded before the operation, and the clients waiting.
pub struct Case {
    pub master: Server,
    pub replica: Option<Server>,
    pub c: Connection,
    /// The gate's token, the counter and the lease's end, before the operation.
    pub gate_before: u64,
    pub counter_before: u64,
    pub lease_end: Instant,
    /// DUMPs taken before the gate's last rise, for RESTOREs of an older value.
    pub older: Vec<(Kind, Vec<u8>)>,
    waiting: Vec<(String, mpsc::Receiver<Instant>)>,
}

impl Case {
    /// A master started from `builder` (DEBUG allowed), its replica, and one of each kind.
    pub fn start(builder: dlock_testkit::Builder) -> Case {
        let master = builder.config("enable-debug-command", "yes").start();
        let debug = Server::builder().config("enable-debug-command", "yes");
        let replica = replica_built(&master, debug);
        let mut c = master.conn();
        let token = acquire(&mut c, "m:token", "setup", 60_000).expect("granted") as u64;
        let lease = LEASE.as_millis() as i64;
        // Each kind's DUMP is taken once, then the value rises (an older DUMP to RESTORE).
        let mut older = Vec::new();
        gate(&mut c, token - 1);
        older.push((Kind::Gate, dump(&mut c, Kind::Gate.key())));
        gate(&mut c, token);
        let lock = acquire(&mut c, Kind::Lock.key(), "holder", lease).expect("granted");
        older.push((Kind::Lock, dump(&mut c, Kind::Lock.key())));
        fence(&mut c, Kind::Lock.key(), "holder", lock + 1);
        shared(&mut c, "r1", lease).expect("a shared hold");
        older.push((Kind::Table, dump(&mut c, Kind::Table.key())));
        shared(&mut c, "r2", lease).expect("a shared hold");
        let lease_end = Instant::now() + LEASE;
        // A set waits first on the table (and a free key), the table's exclusive waiter behind
        // it: the set is served when the table frees, its 1 ms lease ends, then the waiter's.
        let set = set_waiter(&master, &[Kind::Table.key(), "m:free"]);
        eventually("the set queued", 5_000, || {
            info_field(&mut c, "waiters") == 1
        });
        let waiting = vec![
            set,
            waiter(&master, Kind::Lock.key()),
            waiter(&master, Kind::Table.key()),
            observer(&master, lock + 1),
        ];
        eventually("the waiters queued and the observer blocked", 5_000, || {
            info_field(&mut c, "waiters") == 3
                && crate::common::observing::blocked_clients(&mut c) == 4
        });
        let (gate_before, counter_before) = (token, counter(&mut c) as u64);
        Case {
            master,
            replica: Some(replica),
            c,
            gate_before,
            counter_before,
            lease_end,
            older,
            waiting,
        }
    }

    /// Applies `op` and checks every invariant.
    pub fn run(mut self, op: fn(&mut Case) -> After) {
        let after = op(&mut self);
        let op_end = Instant::now();
        let bound = match after.ends_locks {
            true => op_end,
            false => self.lease_end.max(op_end),
        } + ANSWERED_WITHIN;
        for (who, answered) in std::mem::take(&mut self.waiting) {
            let left = bound.saturating_duration_since(Instant::now());
            let at = answered.recv_timeout(left + Duration::from_millis(100));
            assert!(at.is_ok_and(|at| at <= bound), "{who} not answered in time");
        }
        let checked = match &after.checked {
            Checked::Master => &self.master,
            Checked::Target(target) => target,
            Checked::Replica => self.replica.as_ref().expect("a replica"),
        };
        let mut c = checked.conn();
        self.check_tokens(&mut c, &after);
        self.check_leases_end(&mut c, &after);
        if let (Checked::Master, Some(replica)) = (&after.checked, &self.replica) {
            same_digest(&mut self.c, &mut replica.conn());
        }
        checked.assert_no_crash();
    }

    fn check_tokens(&self, c: &mut Connection, after: &After) {
        let counter = counter(c) as u64;
        assert!(counter >= self.counter_before, "the counter went down");
        let mut highest = self.counter_before;
        for (kind, at) in &after.at {
            let Some((db, key)) = at else {
                continue;
            };
            select(c, *db);
            if *kind == Kind::Gate {
                let token = gate_token(c, key);
                assert!(
                    token >= self.gate_before,
                    "the gate fell: {token} < {}",
                    self.gate_before
                );
                assert!(counter >= token, "a gate above the counter");
                highest = highest.max(token);
            }
        }
        select(c, 0);
        let fresh = acquire(c, "m:fresh", "fresh", 10_000).expect("granted") as u64;
        assert!(fresh > highest, "a fresh grant {fresh} not above {highest}");
    }

    /// Past every deadline, no holder of the setup holds a lock anywhere: the keys where the
    /// locks were are free for a newcomer (or held by their waiter), and where the operation
    /// carried them they are not held (a reset one may hold another value now).
    fn check_leases_end(&self, c: &mut Connection, after: &After) {
        std::thread::sleep(self.lease_end.saturating_duration_since(Instant::now()));
        for (kind, at) in &after.at {
            if *kind == Kind::Gate {
                continue;
            }
            let Some((db, key)) = at else {
                continue;
            };
            select(c, *db);
            let holders = status_owners(c, key);
            let setup = ["holder", "r1", "r2"];
            assert!(
                !holders.iter().any(|h| setup.contains(&h.as_str())),
                "{kind:?} at {db}/{key} still held past its deadline by {holders:?}"
            );
            select(c, 0);
            let took = redis::cmd("DLOCK.ACQUIRE")
                .arg(&[kind.key(), "newcomer", "1000"])
                .query::<Option<i64>>(c);
            let holders = status_owners(c, kind.key());
            assert!(
                took.is_ok_and(|t| t.is_some())
                    || holders.iter().all(|o| o == "waiter" || o == "newcomer"),
                "{kind:?} not free past its deadline: {holders:?}"
            );
        }
    }
}

fn gate(c: &mut Connection, token: u64) {
    redis::cmd("DLOCK.GUARD")
        .arg(Kind::Gate.key())
        .arg(token)
        .arg(&["SET", "m:data", "v"])
        .exec(c)
        .expect("GUARD");
}

fn shared(c: &mut Connection, owner: &str, lease: i64) -> Option<i64> {
    redis::cmd("DLOCK.ACQUIRE")
        .arg(Kind::Table.key())
        .arg(owner)
        .arg(lease)
        .arg("SHARED")
        .query(c)
        .expect("ACQUIRE SHARED")
}

fn dump(c: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(c).expect("DUMP")
}

pub fn select(c: &mut Connection, db: i64) {
    redis::cmd("SELECT").arg(db).exec(c).expect("SELECT");
}

/// Every owner STATUS shows for `key` (a plain lock's, or a table's holders).
fn status_owners(c: &mut Connection, key: &str) -> Vec<String> {
    let reply: Value = redis::cmd("DLOCK.STATUS")
        .arg(key)
        .query(c)
        .unwrap_or(Value::Nil); // WRONGTYPE: another value took the key
    let mut words = Vec::new();
    strings(&reply, &mut words);
    let owners = ["holder", "r1", "r2", "waiter", "newcomer"];
    words.retain(|w| owners.contains(&w.as_str()));
    words
}

fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// A client waiting on `key` (exclusive, WAIT 10 s); the receiver gets when it was answered.
fn waiter(server: &Server, key: &str) -> (String, mpsc::Receiver<Instant>) {
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    let owned = key.to_string();
    std::thread::spawn(move || {
        let _ = redis::cmd("DLOCK.ACQUIRE")
            .arg(&[owned.as_str(), "waiter", "10000", "WAIT", "10000"])
            .query::<Value>(&mut c);
        let _ = tx.send(Instant::now());
    });
    (format!("the waiter on {key}"), rx)
}

/// A set of `keys` waiting for them all (a 1 ms lease once served, WAIT 10 s).
fn set_waiter(server: &Server, keys: &[&str]) -> (String, mpsc::Receiver<Instant>) {
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    let owned: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    std::thread::spawn(move || {
        let _ = redis::cmd("DLOCK.ACQUIREALL")
            .arg(owned.len())
            .arg(&owned)
            .arg(&["set-waiter", "1", "WAIT", "10000"])
            .query::<Value>(&mut c);
        let _ = tx.send(Instant::now());
    });
    (format!("the set waiting on {keys:?}"), rx)
}

/// A client observing the plain lock after `token` (TIMEOUT 10 s).
fn observer(server: &Server, token: i64) -> (String, mpsc::Receiver<Instant>) {
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    let token = token.to_string();
    std::thread::spawn(move || {
        let _ = redis::cmd("DLOCK.OBSERVE")
            .arg(&[
                Kind::Lock.key(),
                "AFTER",
                token.as_str(),
                "TIMEOUT",
                "10000",
            ])
            .query::<Value>(&mut c);
        let _ = tx.send(Instant::now());
    });
    ("the observer".to_string(), rx)
}

/// The replica ends with the master's data (eventually: an expiry or a timer's effect may be on
/// its way).
pub fn same_digest(master: &mut Connection, replica: &mut Connection) {
    let digest =
        |c: &mut Connection| -> String { redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap() };
    let mut last = (String::new(), String::new());
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let _: redis::RedisResult<i64> = redis::cmd("WAIT").arg(1).arg(1_000).query(master);
        last = (digest(master), digest(replica));
        if last.0 == last.1 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the replica's digest differs from the master's: {last:?}");
}
