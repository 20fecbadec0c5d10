//! The protected resource: a Redis server of its own (with the module, never faulted) where
//! every worker writes inside its critical section. Each write goes twice: through a gate
//! (`DLOCK.GUARD chaos:gate <token> RPUSH chaos:guarded <token>`, what a user of guarded writes
//! does) and straight (`RPUSH chaos:unguarded <token>`, what a lock without a checked token
//! gives). The lists keep the server's order of the writes it accepted, so the checker judges
//! what the data saw, not what the clients believe; the unguarded list shows what the same
//! faults do without the gate.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use dlock_testkit::Server;
use redis::aio::MultiplexedConnection;

const GATE: &str = "chaos:gate";
const GUARDED: &str = "chaos:guarded";
const UNGUARDED: &str = "chaos:unguarded";

/// One critical section as the worker saw it.
#[derive(Debug, Clone)]
pub struct Section {
    pub token: u64,
    /// When the client finished acquiring (orders grants for the token-order check).
    pub granted_at: Instant,
    /// First and last write.
    pub start: Instant,
    pub end: Instant,
}

/// One write as the resource saw it.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    pub token: u64,
    pub accepted: bool,
}

/// What the resource recorded: the gated writes (accepted ones in the server's order, then the
/// refused ones) and the tokens of the straight writes, in the server's order.
pub struct Record {
    pub sections: Vec<Section>,
    pub guarded: Vec<Write>,
    pub unguarded: Vec<u64>,
}

pub struct Resource {
    server: Server,
    sections: Mutex<Vec<Section>>,
    refused: Mutex<Vec<u64>>,
    /// Replies that were neither a pass nor STALE (the resource is never faulted: expect 0).
    pub errors: AtomicUsize,
}

impl Resource {
    pub fn start() -> Resource {
        Resource {
            server: Server::builder().start(),
            sections: Mutex::default(),
            refused: Mutex::default(),
            errors: AtomicUsize::new(0),
        }
    }

    /// A connection for one worker.
    pub async fn connect(&self) -> redis::RedisResult<MultiplexedConnection> {
        let client = redis::Client::open(self.server.url())?;
        client.get_multiplexed_async_connection().await
    }

    /// One write under `token`, straight and through the gate; true if the gate let it through.
    pub async fn write(&self, conn: &mut MultiplexedConnection, token: u64) -> bool {
        let straight: redis::RedisResult<i64> = redis::cmd("RPUSH")
            .arg(UNGUARDED)
            .arg(token)
            .query_async(conn)
            .await;
        let gated: redis::RedisResult<i64> = redis::cmd("DLOCK.GUARD")
            .arg(GATE)
            .arg(token)
            .arg("RPUSH")
            .arg(GUARDED)
            .arg(token)
            .query_async(conn)
            .await;
        if straight.is_err() {
            self.errors.fetch_add(1, Relaxed);
        }
        match gated {
            Ok(_) => true,
            Err(e) if e.code() == Some("STALE") => {
                lock(&self.refused).push(token);
                false
            }
            Err(e) => {
                eprintln!("chaos: the resource answered {e}");
                self.errors.fetch_add(1, Relaxed);
                false
            }
        }
    }

    /// Records a finished critical section.
    pub fn record(&self, section: Section) {
        lock(&self.sections).push(section);
    }

    pub fn now(&self) -> Instant {
        Instant::now()
    }

    /// The scenario's figures from everything recorded (crate::checker).
    pub fn figures(&self) -> crate::checker::Figures {
        crate::checker::judge_record(&self.take(), self.errors.load(Relaxed))
    }

    /// Everything recorded so far, the lists read from the server.
    fn take(&self) -> Record {
        let mut c = self.server.conn();
        let list = |c: &mut redis::Connection, key: &str| -> Vec<u64> {
            redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query(c)
                .expect("the resource's list (the resource is never faulted)")
        };
        let accepted = list(&mut c, GUARDED).into_iter().map(|token| Write {
            token,
            accepted: true,
        });
        let refused = std::mem::take(&mut *lock(&self.refused))
            .into_iter()
            .map(|token| Write {
                token,
                accepted: false,
            });
        Record {
            sections: std::mem::take(&mut *lock(&self.sections)),
            guarded: accepted.chain(refused).collect(),
            unguarded: list(&mut c, UNGUARDED),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
