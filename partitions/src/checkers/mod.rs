//! The checkers: a run's history (history.rs, the operations and the nemesis's windows) judged,
//! and nothing else read. The register's linearizability (linear.rs); the mutex's invariants
//! (lock.rs), the read/write lock's and the semaphore's (shared.rs), the election's
//! (election.rs); what they report and the invariants they share (common.rs).

pub mod common;
pub mod election;
pub mod linear;
pub mod lock;
pub mod shared;
