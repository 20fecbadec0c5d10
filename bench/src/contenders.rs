//! The in-process contenders: dlock-client (fencing on/off), the PING fan-out floor, rslock,
//! and on one node the raw commands through the same `redis` client: DLOCK.ACQUIRE/RELEASE
//! against SET NX PX + the compare-and-delete script.

use std::time::{Duration, Instant};

use futures::future::join_all;
use redis::aio::MultiplexedConnection;

const TTL: Duration = Duration::from_secs(10);
const RELEASE_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

pub enum Contender {
    Dlock(dlock_client::LockManager),
    /// dlock-client, reading each lock's token before the release (a no-wait hold's token
    /// commits on that first read: docs/protocol.md §4.1).
    DlockTokenUsed(dlock_client::LockManager),
    Rslock(rslock::LockManager),
    PingFloor(Vec<MultiplexedConnection>),
    RawDlock(MultiplexedConnection),
    RawSetLua(MultiplexedConnection, redis::Script),
}

impl Contender {
    pub fn dlock(nodes: &[String], fencing: bool) -> Contender {
        Self::dlock_waiting(nodes, fencing, dlock_client::WaitMode::default())
    }

    /// dlock-client whose `lock` waits the given way.
    pub fn dlock_waiting(
        nodes: &[String],
        fencing: bool,
        mode: dlock_client::WaitMode,
    ) -> Contender {
        let manager = dlock_client::LockManager::builder(nodes)
            .fencing(fencing)
            .wait_mode(mode)
            .build()
            .expect("dlock manager");
        Contender::Dlock(manager)
    }

    /// dlock-client with fencing on, each cycle reading its token (the commit paid).
    pub fn dlock_token_used(nodes: &[String]) -> Contender {
        match Self::dlock(nodes, true) {
            Contender::Dlock(manager) => Contender::DlockTokenUsed(manager),
            other => other,
        }
    }

    pub fn rslock(nodes: &[String]) -> Contender {
        let mut manager = rslock::LockManager::new(nodes.to_vec());
        // Same pacing as dlock's default (25 ms + up to 25 ms jitter); rslock sleeps 0..delay.
        manager.set_retry(u32::MAX, Duration::from_millis(50));
        Contender::Rslock(manager)
    }

    pub async fn ping_floor(nodes: &[String]) -> Contender {
        Contender::PingFloor(connect_all(nodes).await)
    }

    pub async fn raw_dlock(node: &str) -> Contender {
        Contender::RawDlock(connect_all(&[node.to_string()]).await.remove(0))
    }

    pub async fn raw_set_lua(node: &str) -> Contender {
        let conn = connect_all(&[node.to_string()]).await.remove(0);
        Contender::RawSetLua(conn, redis::Script::new(RELEASE_SCRIPT))
    }

    /// One uncontended acquire + release of `key` (for the floor: one PING fan-out).
    pub async fn cycle(&self, key: &str) -> Result<(), String> {
        match self {
            Contender::Dlock(m) => {
                let guard = m.try_lock(key, TTL).await.map_err(|e| e.to_string())?;
                guard.release().await.map_err(|e| e.to_string())
            }
            Contender::DlockTokenUsed(m) => {
                let guard = m.try_lock(key, TTL).await.map_err(|e| e.to_string())?;
                std::hint::black_box(guard.token().await.map_err(|e| e.to_string())?);
                guard.release().await.map_err(|e| e.to_string())
            }
            Contender::Rslock(m) => {
                let lock = m
                    .lock(key.as_bytes(), TTL)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                m.unlock(&lock).await;
                Ok(())
            }
            Contender::PingFloor(conns) => {
                let pings = conns.iter().map(|c| async move {
                    redis::cmd("PING")
                        .query_async::<String>(&mut c.clone())
                        .await
                });
                join_all(pings)
                    .await
                    .into_iter()
                    .try_for_each(|r| r.map(drop).map_err(|e| e.to_string()))
            }
            Contender::RawDlock(c) => {
                let mut c = c.clone();
                let token: Option<u64> = redis::cmd("DLOCK.ACQUIRE")
                    .arg(key)
                    .arg("owner")
                    .arg(10_000)
                    .query_async(&mut c)
                    .await
                    .map_err(|e| e.to_string())?;
                token.ok_or("held")?;
                redis::cmd("DLOCK.RELEASE")
                    .arg(key)
                    .arg("owner")
                    .query_async::<i64>(&mut c)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
            Contender::RawSetLua(c, script) => {
                let mut c = c.clone();
                let set: Option<String> = redis::cmd("SET")
                    .arg(key)
                    .arg("owner")
                    .arg("NX")
                    .arg("PX")
                    .arg(10_000)
                    .query_async(&mut c)
                    .await
                    .map_err(|e| e.to_string())?;
                set.ok_or("held")?;
                script
                    .key(key)
                    .arg("owner")
                    .invoke_async::<i64>(&mut c)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Waits for `key` (retrying), holds it for `hold`, releases; returns the wait.
    pub async fn contend(&self, key: &str, hold: Duration) -> Result<Duration, String> {
        let started = Instant::now();
        match self {
            Contender::Dlock(m) => {
                let guard = m
                    .lock(key, TTL, Duration::from_secs(60))
                    .await
                    .map_err(|e| e.to_string())?;
                let waited = started.elapsed();
                hold_for(hold);
                guard.release().await.map_err(|e| e.to_string())?;
                Ok(waited)
            }
            Contender::Rslock(m) => {
                let lock = m
                    .acquire_no_guard(key.as_bytes(), TTL)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                let waited = started.elapsed();
                hold_for(hold);
                m.unlock(&lock).await;
                Ok(waited)
            }
            _ => Err("contention is measured for dlock and rslock".into()),
        }
    }

    /// A holder takes `key` for `ttl` and dies (never releases, never extends); a waiter asks
    /// for it at once. How long after the holder's deadline the waiter got it, in µs. The
    /// deadline is counted from when the holder's request was sent, so the figure errs late by
    /// up to one acquisition.
    pub async fn after_holder_dies(&self, key: &str, ttl: Duration) -> Result<f64, String> {
        let sent = Instant::now();
        let got = match self {
            Contender::Dlock(m) => {
                let holder = m.try_lock(key, ttl).await.map_err(|e| e.to_string())?;
                // Dies: no release on drop, and no commit either (its token is never read).
                std::mem::forget(holder);
                let next = m.lock(key, TTL, Duration::from_secs(10)).await;
                let got = Instant::now();
                next.map_err(|e| e.to_string())?
                    .release()
                    .await
                    .map_err(|e| e.to_string())?;
                got
            }
            Contender::Rslock(m) => {
                m.lock(key.as_bytes(), ttl)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                let next = m.acquire_no_guard(key.as_bytes(), TTL).await;
                let got = Instant::now();
                m.unlock(&next.map_err(|e| format!("{e:?}"))?).await;
                got
            }
            _ => return Err("measured for dlock and rslock".into()),
        };
        let deadline = sent + ttl;
        Ok(if got >= deadline {
            (got - deadline).as_secs_f64() * 1e6
        } else {
            -((deadline - got).as_secs_f64() * 1e6)
        })
    }

    /// Acquires `key` once, then times `n` extensions.
    pub async fn extensions(&self, key: &str, n: usize) -> Result<Vec<f64>, String> {
        let mut samples = Vec::with_capacity(n);
        match self {
            Contender::Dlock(m) => {
                let mut guard = m.try_lock(key, TTL).await.map_err(|e| e.to_string())?;
                for _ in 0..n {
                    let t = Instant::now();
                    guard.extend(TTL).await.map_err(|e| e.to_string())?;
                    samples.push(t.elapsed().as_micros() as f64);
                }
                guard.release().await.map_err(|e| e.to_string())?;
            }
            Contender::Rslock(m) => {
                let lock = m
                    .lock(key.as_bytes(), TTL)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                for _ in 0..n {
                    let t = Instant::now();
                    m.extend(&lock, TTL).await.map_err(|e| format!("{e:?}"))?;
                    samples.push(t.elapsed().as_micros() as f64);
                }
                m.unlock(&lock).await;
            }
            _ => return Err("extension is measured for dlock and rslock".into()),
        }
        Ok(samples)
    }
}

async fn connect_all(nodes: &[String]) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::new();
    for url in nodes {
        let client = redis::Client::open(url.as_str()).expect("node url");
        conns.push(
            client
                .get_multiplexed_async_connection()
                .await
                .expect("connect"),
        );
    }
    conns
}

/// Holds for `hold` as precisely as the externals' `time.sleep` / `setTimeout` do: a Tokio sleep
/// rounds up to its 1 ms timer tick (1-2 ms for a 1 ms hold), which would slow every in-process
/// contender by the harness, not by its lock. Blocks this worker thread meanwhile (the runtime
/// has another; only the holder sleeps).
fn hold_for(hold: Duration) {
    tokio::task::block_in_place(|| std::thread::sleep(hold));
}
