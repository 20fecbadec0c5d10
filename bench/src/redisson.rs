//! Redisson's lock, as Redisson sends it: the hash-based reentrant lock's scripts (shared with
//! `make bench-capacity`), and `RedissonMultiLock.lock()` on top of them for `make bench-multi`
//! (docs/bench/multi.md): each lock taken in the caller's order, each waiting on the lock's
//! pub/sub channel, everything acquired so far given back when one is not had in time.

use std::time::{Duration, Instant};

use futures::StreamExt;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};
use tokio::sync::Mutex;

/// Redisson's `RedissonLock.tryLockInnerAsync` (3.x and 4.x master, 2026-08), verbatim.
pub const LOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// Redisson's `RedissonLock.unlockInnerAsync` since 3.24.0 (the unlock latch, #4871), verbatim.
pub const UNLOCK: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
/// Redisson's `RedissonLock.unlockInnerAsync` up to 3.23.5, verbatim.
pub const UNLOCK_3_23: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1; end; return nil;";

/// The lease a lock takes when `lock()` is given none: the watchdog's (`lockWatchdogTimeout`,
/// 30 s, renewed every 10 s; no hold here comes near it, so no renewal is sent).
pub const WATCHDOG_LEASE: Duration = Duration::from_secs(30);
/// `RedissonMultiLock.lockInterruptibly`: each round's wait is 1,500 ms per lock.
const WAIT_PER_LOCK: Duration = Duration::from_millis(1_500);

/// One worker's subscription connection (Redisson shares one per client; a worker here is one
/// client): the channel sink and the messages.
struct Subscriber {
    sink: PubSubSink,
    messages: PubSubStream,
}

/// `RedissonMultiLock` over locks named `names`, lock `i` on `route[i]` (its key's master).
pub struct MultiLock {
    names: Vec<String>,
    route: Vec<MultiplexedConnection>,
    subscribers: Vec<Mutex<Subscriber>>,
    lock: redis::Script,
    unlock: redis::Script,
}

impl MultiLock {
    /// `subscribe_url`: a node whose pub/sub sees every `PUBLISH` (one node, or any node of a
    /// Cluster, where classic pub/sub reaches every node). One subscriber per worker.
    pub async fn connect(
        names: Vec<String>,
        route: Vec<MultiplexedConnection>,
        subscribe_url: &str,
        workers: usize,
    ) -> redis::RedisResult<MultiLock> {
        let client = redis::Client::open(subscribe_url)?;
        let mut subscribers = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (sink, messages) = client.get_async_pubsub().await?.split();
            subscribers.push(Mutex::new(Subscriber { sink, messages }));
        }
        Ok(MultiLock {
            names,
            route,
            subscribers,
            lock: redis::Script::new(LOCK),
            unlock: redis::Script::new(UNLOCK),
        })
    }

    /// `lock()`: `tryLock(locks × 1,500 ms, -1)` until it succeeds, `resources` in the
    /// caller's order. Returns how many rounds gave everything back.
    pub async fn lock(&self, worker: usize, resources: &[usize]) -> redis::RedisResult<u64> {
        let wait = WAIT_PER_LOCK * resources.len() as u32;
        let mut failed_rounds = 0;
        while !self.try_lock(worker, resources, wait).await? {
            failed_rounds += 1;
        }
        Ok(failed_rounds)
    }

    /// `RedissonMultiLock.tryLock(waitTime, -1)`: each lock waits up to the time left; on a
    /// lock not had, the ones acquired are unlocked and the round starts over while time is
    /// left (MultiLock's failed-locks limit is 0).
    async fn try_lock(
        &self,
        worker: usize,
        resources: &[usize],
        wait: Duration,
    ) -> redis::RedisResult<bool> {
        let deadline = Instant::now() + wait;
        let mut acquired: Vec<usize> = Vec::with_capacity(resources.len());
        let mut next = 0;
        while next < resources.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.lock_one(worker, resources[next], left).await? {
                acquired.push(resources[next]);
                next += 1;
            } else {
                self.unlock(worker, &acquired).await?;
                acquired.clear();
                next = 0;
            }
            if Instant::now() >= deadline && next < resources.len() {
                self.unlock(worker, &acquired).await?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `RedissonLock.tryLock(wait, -1)`: the lock script; else subscribe to the lock's channel
    /// and retry at each unlock message, or when the holder's TTL or the wait runs out.
    async fn lock_one(&self, worker: usize, r: usize, wait: Duration) -> redis::RedisResult<bool> {
        let deadline = Instant::now() + wait;
        let Some(mut ttl) = self.try_acquire(worker, r).await? else {
            return Ok(true);
        };
        let channel = channel(&self.names[r]);
        let mut sub = self.subscribers[worker].lock().await;
        sub.sink.subscribe(&channel).await?;
        let got = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            let pause = left.min(Duration::from_millis(ttl.max(0) as u64));
            let _ = tokio::time::timeout(pause, sub.messages.next()).await;
            match self.try_acquire(worker, r).await? {
                None => break true,
                Some(t) => ttl = t,
            }
        };
        sub.sink.unsubscribe(&channel).await?;
        Ok(got)
    }

    /// The lock script: `None` when held, else the holder's remaining TTL (ms).
    async fn try_acquire(&self, worker: usize, r: usize) -> redis::RedisResult<Option<i64>> {
        let mut c = self.route[r].clone();
        self.lock
            .key(&self.names[r])
            .arg(WATCHDOG_LEASE.as_millis() as u64)
            .arg(holder(worker))
            .invoke_async(&mut c)
            .await
    }

    /// `unlockInner`: the unlock script on each, then the latch's `DEL` (Redisson >= 3.24).
    pub async fn unlock(&self, worker: usize, resources: &[usize]) -> redis::RedisResult<()> {
        for &r in resources {
            let name = &self.names[r];
            let latch = format!("redisson_unlock_latch:{{{name}}}:{worker:032x}");
            let mut c = self.route[r].clone();
            let _: Option<i64> = self
                .unlock
                .key(name)
                .key(channel(name))
                .key(&latch)
                .arg(0)
                .arg(WATCHDOG_LEASE.as_millis() as u64)
                .arg(holder(worker))
                .arg("publish")
                .arg(20_000)
                .invoke_async(&mut c)
                .await?;
            redis::cmd("DEL").arg(&latch).exec_async(&mut c).await?;
        }
        Ok(())
    }
}

/// The lock's unlock channel, as Redisson names it.
fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// Redisson's hash field: the client's UUID and the thread id (here the worker).
fn holder(worker: usize) -> String {
    format!("6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f:{worker}")
}
