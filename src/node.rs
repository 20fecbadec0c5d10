//! The one per-node [`Node`]: fencing counter and quarantine clock, shared by all keys.
//! Redis runs commands on one thread; the mutex only makes that explicit (and is uncontended).

use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::lock::{Node, SystemClock};

static NODE: LazyLock<Mutex<Node<SystemClock>>> =
    LazyLock::new(|| Mutex::new(Node::new(SystemClock)));

/// The node state. A panic never happens while it is held, but a poisoned lock is still usable.
pub fn node() -> MutexGuard<'static, Node<SystemClock>> {
    NODE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the quarantine clock: called when the module loads.
pub fn start() {
    LazyLock::force(&NODE);
}
