//! How each kind of scenario is played: one lock on five nodes (lock.rs, scenarios 1-8), on a
//! Redis Cluster (cluster.rs, 9 and 10), a semaphore's holder processes (semaphore.rs, 11).

pub mod cluster;
pub mod lock;
pub mod semaphore;
