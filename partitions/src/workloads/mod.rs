//! What the client processes do (docs/safety/partitions.md), through the Rust library,
//! every operation recorded as it happens (history.rs): the mutex (mutex.rs), a read/write lock
//! and a semaphore (shared.rs), an election (election.rs). What they share: their arguments
//! (args.rs), their connections (connect.rs), taking and releasing a lock (lock.rs) and the
//! critical section that writes the register through the gate (section.rs). The process around
//! them is worker/'s.

pub mod args;
pub mod connect;
pub mod election;
pub mod lock;
pub mod mutex;
pub mod section;
pub mod shared;
