//! Real redis-server nodes with the module for the CLI tests (the node helpers are testkit's,
//! shared with the client tests).
#![allow(dead_code)]

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use dlock_testkit::{nodes, token_on, urls, waiters, Server};

/// The per-node timeout the tests give `dlock` (`DLOCK_TIMEOUT`): generous, so that on a loaded
/// 2-core machine (parallel builds, other tests' servers) a slow reply is not mistaken for a down
/// node. The client tests use the same (`PATIENT` in client/tests/common/mod.rs).
pub const PATIENT: &str = "500ms";
