//! The client's integration tests against real nodes, one test binary with a module per file:
//! a binary per file compiled the client's generic code and linked it once for each (about a
//! minute and a half of CI). `cargo test -p dlock-client --test integration election::` runs one.

mod common;

mod cluster;
mod commit;
mod election;
mod errors;
mod guarded;
mod identity;
mod lease;
mod local_waits;
mod observe;
mod queue_mode;
mod quorum;
mod sentinel;
mod sets;
mod shared;
mod slot_migration;
mod slow_node;
mod tls;
