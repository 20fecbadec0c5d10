//! One Redis master: a lazily made multiplexed connection, re-made after any I/O error, and
//! every call bounded by the per-node timeout. A down node costs a failed call, never a hang.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, FromRedisValue};
use tokio::sync::Mutex;

use crate::error::{Error, NodeFailure};

pub struct Node {
    url: String,
    client: Client,
    connection: Mutex<Option<MultiplexedConnection>>,
}

impl Node {
    pub fn new(url: &str) -> Result<Node, Error> {
        let client = Client::open(url)
            .map_err(|e| Error::InvalidArgument(format!("node URL {url:?}: {e}")))?;
        Ok(Node {
            url: url.to_string(),
            client,
            connection: Mutex::new(None),
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

    async fn call_unbounded<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        timeout: Duration,
    ) -> Result<T, NodeFailure> {
        let mut connection = self.connection(timeout).await?;
        match cmd.query_async::<T>(&mut connection).await {
            Ok(value) => Ok(value),
            Err(e) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                    *self.connection.lock().await = None; // next call reconnects
                }
                Err(self.failure(reply_error(&e)))
            }
        }
    }

    /// The shared connection, made on first use or after an error.
    async fn connection(&self, timeout: Duration) -> Result<MultiplexedConnection, NodeFailure> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(None);
        let connection = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.failure(format!("cannot connect: {e}")))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure {
            node: self.url.clone(),
            reason,
        }
    }
}

/// A server error as Redis wrote it (`TRYAGAIN ...`), anything else as the client describes it.
fn reply_error(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}
