//! What every client of the suite runs on: a small runtime and a lock manager over the nodes
//! with a short timeout (a node that does not answer must not hold a worker up).

use std::time::Duration;

use dlock_client::{LockManager, ReplicaAck};

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

pub fn manager(urls: &[String], replica_ack: ReplicaAck) -> LockManager {
    LockManager::builder(urls)
        .timeout(Duration::from_millis(50))
        .replica_ack(replica_ack)
        .build()
        .expect("lock manager")
}
