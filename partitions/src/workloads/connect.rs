//! A client process's two connections: the lock manager over the run's nodes (the library's
//! options the suite runs with), and the register, where the critical sections read and write.

use std::time::Duration;

use dlock_client::{LockManager, ReplicaAck};
use redis::aio::MultiplexedConnection;

use crate::workloads::args::WorkerArgs;

/// Short timeouts: a node cut off must not hold a call up past the lease it is about.
pub fn manager(args: &WorkerArgs) -> Result<LockManager, String> {
    let ack = match args.replicas {
        0 => ReplicaAck::Off,
        count => ReplicaAck::Replicas {
            count,
            timeout: Duration::from_millis(200),
        },
    };
    LockManager::builder(&args.nodes)
        .timeout(Duration::from_millis(100))
        .replica_ack(ack)
        .build()
        .map_err(|e| format!("lock manager: {e}"))
}

pub async fn register(url: &str) -> Result<MultiplexedConnection, String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("register {url}: {e}"))
}
