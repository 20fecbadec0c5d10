//! Redlock across N independent Redis masters running the dlock module, with quorum fencing
//! tokens that stay ordered when Redlock's timing assumptions break (docs/protocol.md).
//!
//! ```no_run
//! # async fn demo() -> Result<(), dlock_client::Error> {
//! use std::time::Duration;
//! let locks = dlock_client::LockManager::new([
//!     "redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003",
//! ])?;
//! let guard = locks.lock("orders:42", Duration::from_secs(10), Duration::from_secs(5)).await?;
//! println!("token {} valid for {:?}", guard.token(), guard.validity());
//! guard.release().await?;
//! # Ok(()) }
//! ```

pub mod acquisition;
mod admin;
mod connect;
mod error;
mod guard;
mod kind;
mod manager;
mod observe;
mod options;
mod probe;
mod round;
mod shared;
pub mod timing;
mod transport;
mod waiting;

#[cfg(test)]
mod conformance_tests;

pub use admin::{Holders, LockInfo, NodeStatus};
pub use connect::{Credentials, Tls};
pub use error::{Error, NodeFailure};
pub use guard::{LockContext, LockGuard, Watchdog};
pub use kind::{LockKind, Resource, MAX_LIMIT};
pub use manager::{LockManager, LockManagerBuilder};
pub use observe::{HeldLock, Holder, NodeView, QueueState, QueuedLock, Top};
pub use options::{ReplicaAck, WaitMode};
pub use probe::WaitProbe;
