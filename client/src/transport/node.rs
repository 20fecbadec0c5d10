//! One Redis master: a lazily made multiplexed connection, re-made after any I/O error, and
//! every call bounded by the per-node timeout. A down node costs a failed call, never a hang.
//!
//! Server-side waits (`ACQUIRE ... WAIT`) block the connection they are sent on, so each gets a
//! connection of its own, taken from a small pool of idle ones. A wait that is abandoned (the
//! lock was won elsewhere, the deadline passed) drops its connection: the server sees the
//! disconnect and takes the waiter out of its queue at once.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, FromRedisValue};
use tokio::sync::Mutex;

use crate::error::{Error, NodeFailure};

/// Idle wait connections kept per node; more are made on demand and closed after use.
const IDLE_WAIT_CONNECTIONS: usize = 64;

pub struct Node {
    url: String,
    client: Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    idle_for_waits: std::sync::Mutex<Vec<MultiplexedConnection>>,
}

impl Node {
    pub fn new(url: &str) -> Result<Node, Error> {
        let client = Client::open(url)
            .map_err(|e| Error::InvalidArgument(format!("node URL {url:?}: {e}")))?;
        Ok(Node {
            url: url.to_string(),
            client,
            connection: Mutex::new(None),
            idle_for_waits: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `cmd` with everything (connecting included) inside `timeout`.
    pub async fn call<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        timeout: Duration,
    ) -> Result<T, NodeFailure> {
        match tokio::time::timeout(timeout, self.call_unbounded(cmd, timeout)).await {
            Ok(result) => result,
            Err(_) => Err(self.failure(format!("timed out after {timeout:?}"))),
        }
    }

    /// A connection that was open before this call and turns out dead (the node restarted
    /// since) is replaced and the call made once more: every request the client sends can be
    /// repeated by the same owner without changing the outcome (a repeated RELEASE answers 0,
    /// which still counts as an answer).
    async fn call_unbounded<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        timeout: Duration,
    ) -> Result<T, NodeFailure> {
        let (mut connection, reused) = self.connection(timeout).await?;
        let mut reply = cmd.query_async::<T>(&mut connection).await;
        if reused && reply.as_ref().is_err_and(is_broken) {
            *self.connection.lock().await = None;
            let (mut fresh, _) = self.connection(timeout).await?;
            reply = cmd.query_async::<T>(&mut fresh).await;
        }
        reply.map_err(|e| {
            if is_broken(&e) {
                if let Ok(mut slot) = self.connection.try_lock() {
                    *slot = None; // the next call reconnects
                }
            }
            self.failure(reply_error(&e))
        })
    }

    /// Runs a blocking `cmd` on a connection of its own: connecting within `connect_timeout`,
    /// the whole call within `timeout`. The connection goes back to the idle pool only after a
    /// complete reply; a call that fails or is dropped midway closes it.
    pub async fn call_blocking<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<T, NodeFailure> {
        let work = async {
            let idle = self.idle_wait_connection();
            let reused = idle.is_some();
            let mut connection = match idle {
                Some(connection) => connection,
                None => self.connect(connect_timeout).await?,
            };
            let mut reply = cmd.query_async::<T>(&mut connection).await;
            if reused && reply.as_ref().is_err_and(is_broken) {
                connection = self.connect(connect_timeout).await?; // idle since a restart
                reply = cmd.query_async::<T>(&mut connection).await;
            }
            match reply {
                Ok(value) => {
                    self.return_wait_connection(connection);
                    Ok(value)
                }
                Err(e) => Err(self.failure(reply_error(&e))),
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(self.failure(format!("timed out after {timeout:?}"))),
        }
    }

    fn idle_wait_connection(&self) -> Option<MultiplexedConnection> {
        self.idle_for_waits.lock().ok()?.pop()
    }

    fn return_wait_connection(&self, connection: MultiplexedConnection) {
        if let Ok(mut idle) = self.idle_for_waits.lock() {
            if idle.len() < IDLE_WAIT_CONNECTIONS {
                idle.push(connection);
            }
        }
    }

    /// The shared connection, made on first use or after an error; and whether it was open
    /// before (so possibly stale).
    async fn connection(
        &self,
        timeout: Duration,
    ) -> Result<(MultiplexedConnection, bool), NodeFailure> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok((connection.clone(), true));
        }
        let connection = self.connect(timeout).await?;
        *slot = Some(connection.clone());
        Ok((connection, false))
    }

    /// A new connection; replies may take as long as the caller allows.
    async fn connect(&self, timeout: Duration) -> Result<MultiplexedConnection, NodeFailure> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(None);
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.failure(format!("cannot connect: {e}")))
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure {
            node: self.url.clone(),
            reason,
        }
    }
}

/// The connection is unusable (as opposed to a server's error reply).
fn is_broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_timeout()
}

/// A server error as Redis wrote it (`TRYAGAIN ...`), anything else as the client describes it.
fn reply_error(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}
