//! How the other Redis locks wait for a held lock, re-implemented here command for command from
//! their sources (so that the server sees exactly what they send), plus dlock's own commands
//! without the client. Each waiter is one blocking client on its own connection(s), as 32
//! separate processes would be.
//!
//! - python-redis-lock 4.0.1 (`redis_lock/__init__.py`): `SET lock:<name> <id> NX EX <expire>`;
//!   when busy, `BLPOP lock-signal:<name> <expire>` and try again. Release: its UNLOCK_SCRIPT
//!   (GET compare; DEL the signal list, LPUSH one signal, PEXPIRE it `signal_expire` = 1000 ms;
//!   DEL the lock), by EVALSHA.
//! - Redisson's `RLock.lock()` (RedissonLock, 3.24+): the lock script; when busy, SUBSCRIBE to
//!   `redisson_lock__channel:{<name>}`, then loop: the lock script, else wait for a message or
//!   the remaining TTL; UNSUBSCRIBE once held. Unlock: the unlock script (PUBLISH on the channel,
//!   unlock latch) and DEL of the latch.
//! - Polling without a pause: `SET NX PX` until it succeeds; release by compare-and-delete.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use redis::{Connection, Script};

use crate::rawresp::encode;

const TTL_MS: u64 = 10_000;
/// python-redis-lock's `expire` (seconds), also its BLPOP timeout.
const PRL_EXPIRE_S: u64 = 10;
const REDISSON_LEASE_MS: &str = "30000";

/// python-redis-lock 4.0.1's UNLOCK_SCRIPT, verbatim.
pub const PRL_UNLOCK: &str = r#"
    if redis.call("get", KEYS[1]) ~= ARGV[1] then
        return 1
    else
        redis.call("del", KEYS[2])
        redis.call("lpush", KEYS[2], 1)
        redis.call("pexpire", KEYS[2], ARGV[2])
        redis.call("del", KEYS[1])
        return 0
    end
"#;
/// Redisson's lock and unlock scripts (RedissonLock, 4.x master), verbatim.
pub const REDISSON_LOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
pub const REDISSON_UNLOCK: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
pub const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// One blocking waiter: takes the lock (waiting its way), then gives it back.
pub trait Waiter: Send {
    fn acquire(&mut self);
    fn release(&mut self);
}

/// `DLOCK.ACQUIRE key owner ttl WAIT ms` and `DLOCK.RELEASE`: the module's queue, no client.
pub struct RawDlock {
    pub conn: Connection,
    pub key: String,
    pub owner: String,
}

impl Waiter for RawDlock {
    fn acquire(&mut self) {
        loop {
            let token: Option<u64> = redis::cmd("DLOCK.ACQUIRE")
                .arg(&self.key)
                .arg(&self.owner)
                .arg(TTL_MS)
                .arg("WAIT")
                .arg(60_000)
                .query(&mut self.conn)
                .expect("DLOCK.ACQUIRE WAIT");
            if token.is_some() {
                return;
            }
        }
    }

    fn release(&mut self) {
        let released: i64 = redis::cmd("DLOCK.RELEASE")
            .arg(&self.key)
            .arg(&self.owner)
            .query(&mut self.conn)
            .expect("DLOCK.RELEASE");
        assert_eq!(released, 1, "the raw dlock waiter did not hold its lock");
    }
}

/// python-redis-lock's `Lock.acquire(blocking=True)` / `Lock.release()`.
pub struct PythonRedisLock {
    pub conn: Connection,
    pub name: String,
    pub id: String,
}

impl Waiter for PythonRedisLock {
    fn acquire(&mut self) {
        let (lock, signal) = (format!("lock:{}", self.name), self.signal());
        loop {
            let set: Option<String> = redis::cmd("SET")
                .arg(&lock)
                .arg(&self.id)
                .arg("NX")
                .arg("EX")
                .arg(PRL_EXPIRE_S)
                .query(&mut self.conn)
                .expect("SET NX EX");
            if set.is_some() {
                return;
            }
            let _: Option<(String, String)> = redis::cmd("BLPOP")
                .arg(&signal)
                .arg(PRL_EXPIRE_S)
                .query(&mut self.conn)
                .expect("BLPOP");
        }
    }

    fn release(&mut self) {
        let failed: i64 = Script::new(PRL_UNLOCK)
            .key(format!("lock:{}", self.name))
            .key(self.signal())
            .arg(&self.id)
            .arg(1000) // signal_expire
            .invoke(&mut self.conn)
            .expect("python-redis-lock UNLOCK_SCRIPT");
        assert_eq!(failed, 0, "python-redis-lock: not acquired");
    }
}

impl PythonRedisLock {
    fn signal(&self) -> String {
        format!("lock-signal:{}", self.name)
    }
}

/// Redisson's `RLock.lock()` / `unlock()` as one client process each.
pub struct RedissonPubSub {
    pub conn: Connection,
    pub subscriber: Subscriber,
    pub name: String,
    /// The hash field: the client's UUID and the thread id.
    pub holder: String,
    /// Numbers this waiter's unlock requests: with `waiter`, a request id no other unlock uses
    /// (Redisson draws 16 random bytes).
    pub waiter: usize,
    pub unlocks: u64,
}

impl Waiter for RedissonPubSub {
    fn acquire(&mut self) {
        if self.try_lock().is_none() {
            return;
        }
        let channel = format!("redisson_lock__channel:{{{}}}", self.name);
        self.subscriber.send(&["SUBSCRIBE", &channel], "subscribe");
        while let Some(ttl_ms) = self.try_lock() {
            self.subscriber
                .message_within(Duration::from_millis(ttl_ms.max(1) as u64));
        }
        self.subscriber
            .send(&["UNSUBSCRIBE", &channel], "unsubscribe");
    }

    fn release(&mut self) {
        self.unlocks += 1;
        let (name, holder) = (&self.name, &self.holder);
        let request = format!("{:08x}{:024x}", self.waiter, self.unlocks);
        let latch = format!("redisson_unlock_latch:{{{name}}}:{request}");
        let released: Option<i64> = Script::new(REDISSON_UNLOCK)
            .key(name)
            .key(format!("redisson_lock__channel:{{{name}}}"))
            .key(&latch)
            .arg(0) // LockPubSub.UNLOCK_MESSAGE
            .arg(REDISSON_LEASE_MS)
            .arg(holder)
            .arg("publish")
            .arg(20_000) // (timeout + retry delay) x retry attempts, defaults
            .invoke(&mut self.conn)
            .expect("Redisson unlock script");
        assert_eq!(released, Some(1), "Redisson: not locked by this holder");
        let _: i64 = redis::cmd("DEL")
            .arg(&latch)
            .query(&mut self.conn)
            .expect("DEL unlock latch");
    }
}

impl RedissonPubSub {
    /// The lock script: None when held, else the holder's remaining TTL in ms.
    fn try_lock(&mut self) -> Option<i64> {
        Script::new(REDISSON_LOCK)
            .key(&self.name)
            .arg(REDISSON_LEASE_MS)
            .arg(&self.holder)
            .invoke(&mut self.conn)
            .expect("Redisson lock script")
    }
}

/// A subscriber connection read by hand: each push is a 3-element array of bulk strings and
/// integers (`message`, channel, payload / `subscribe`, channel, count).
pub struct Subscriber {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Subscriber {
    pub fn connect(port: u16) -> Subscriber {
        let writer = TcpStream::connect(("127.0.0.1", port)).expect("connect a subscriber");
        writer.set_nodelay(true).expect("TCP_NODELAY");
        let reader = BufReader::new(writer.try_clone().expect("clone socket"));
        Subscriber { writer, reader }
    }

    /// Sends (UN)SUBSCRIBE and reads up to its confirmation; unlock messages that arrive
    /// meanwhile are dropped, as Redisson drops a lock entry's latch with the subscription.
    fn send(&mut self, args: &[&str], confirmation: &str) {
        let mut out = Vec::new();
        encode(args, &mut out);
        self.writer.write_all(&out).expect("send to the subscriber");
        self.writer.set_read_timeout(None).expect("read timeout");
        while self.push().as_deref() != Some(confirmation) {}
    }

    /// Waits for one unlock message, at most `wait`.
    fn message_within(&mut self, wait: Duration) {
        self.writer
            .set_read_timeout(Some(wait))
            .expect("read timeout");
        let _ = self.push();
    }

    /// The kind of the next push (`message`, `subscribe`, ...), None at the read timeout.
    fn push(&mut self) -> Option<String> {
        let header = self.line()?;
        assert_eq!(header, "*3", "subscriber: unexpected reply {header:?}");
        let kind = self.element();
        self.element();
        self.element();
        Some(kind)
    }

    fn element(&mut self) -> String {
        let line = self.line().expect("the rest of a push");
        if line.starts_with('$') {
            return self.line().expect("a bulk string's body");
        }
        line
    }

    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => panic!("the subscriber's connection closed"),
            Ok(_) => Some(line.trim_end().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => None,
            Err(e) => panic!("subscriber: {e}"),
        }
    }
}

/// `SET key owner NX PX` in a loop without pausing, compare-and-delete to release.
pub struct TightPolling {
    pub conn: Connection,
    pub key: String,
    pub owner: String,
}

impl Waiter for TightPolling {
    fn acquire(&mut self) {
        loop {
            let set: Option<String> = redis::cmd("SET")
                .arg(&self.key)
                .arg(&self.owner)
                .arg("NX")
                .arg("PX")
                .arg(TTL_MS)
                .query(&mut self.conn)
                .expect("SET NX PX");
            if set.is_some() {
                return;
            }
        }
    }

    fn release(&mut self) {
        let deleted: i64 = Script::new(COMPARE_AND_DELETE)
            .key(&self.key)
            .arg(&self.owner)
            .invoke(&mut self.conn)
            .expect("compare-and-delete");
        assert_eq!(deleted, 1, "the poller did not hold its lock");
    }
}
