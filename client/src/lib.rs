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
//! println!("token {} valid for {:?}", guard.token().await?, guard.validity());
//! guard.release().await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

#[doc(hidden)]
pub mod acquisition;
mod admin;
mod attempt;
mod backend;
mod builder;
mod calls;
mod checks;
mod commands;
#[doc(hidden)]
pub mod commit;
mod connect;
mod driver;
mod election;
mod election_watch;
mod errors;
mod guarded;
mod kind;
mod lease;
mod local_waits;
mod lock;
mod manager;
mod observe;
mod options;
mod probe;
mod refusals;
mod renewal;
mod set_guard;
#[doc(hidden)]
pub mod timing;
mod transport;

#[cfg(test)]
mod conformance_attempt_tests;
#[cfg(test)]
mod conformance_sets_tests;
#[cfg(test)]
mod conformance_tests;

/// The dlock release this crate belongs to: the one version of the module and every client
/// (`MODULE LIST` shows it as major*10000+minor*100+patch; scripts/version.sh sets it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use admin::{Holders, LockInfo, NodeStatus};
pub use backend::MAX_TTL;
pub use builder::LockManagerBuilder;
pub use checks::MAX_WAIT;
pub use connect::{Credentials, Tls};
pub use election::{split_owner, Leader, Leadership, MAX_VALUE_LEN};
pub use election_watch::Observer;
pub use errors::{Error, NodeFailure};
pub use kind::{LockKind, LockSet, Resource, MAX_LIMIT, MAX_SET};
pub use lock::{LockContext, LockGuard, Watchdog};
pub use manager::LockManager;
pub use observe::{HeldLock, Holder, NodeView, QueueState, QueuedLock, Top};
pub use options::{ReplicaAck, WaitMode};
pub use probe::WaitProbe;
pub use set_guard::SetGuard;
pub use transport::slots::set_groups;
