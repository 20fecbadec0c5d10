//! The one per-node [`Node`]: fencing counter and quarantine clock, shared by all keys. Redis
//! runs commands and callbacks on one thread; the mutex makes that explicit (it is never
//! contended) and keeps the state sound if a callback ever runs elsewhere.

use std::sync::{LazyLock, Mutex, MutexGuard};

use dlock_core::{Node, SystemClock};

static NODE: LazyLock<Mutex<Node<SystemClock>>> =
    LazyLock::new(|| Mutex::new(Node::new(SystemClock)));

/// The node state. Nothing panics while it is held; a poisoned lock would still be usable.
pub fn node() -> MutexGuard<'static, Node<SystemClock>> {
    NODE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the quarantine clock: called when the module loads.
pub fn start() {
    LazyLock::force(&NODE);
}
