//! [`WaitProbe`]: which owner a `lock()` call waits as, for the caller to look up meanwhile.

use std::sync::{Arc, Mutex};

/// The owner a `lock()` call waits as right now (a new one per round), so that the caller can
/// look up its place in the queue meanwhile ([`crate::LockManager::lock_probed`],
/// [`crate::LockManager::queue_state`]). Cheap to clone; clones share the value.
#[derive(Debug, Clone, Default)]
pub struct WaitProbe(Arc<Mutex<Option<String>>>);

impl WaitProbe {
    /// A probe with no owner yet: pass it to [`crate::LockManager::lock_probed`].
    pub fn new() -> WaitProbe {
        WaitProbe::default()
    }

    /// `None` until the call has asked the nodes.
    pub fn owner(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, owner: &str) {
        let mut current = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_deref() != Some(owner) {
            *current = Some(owner.to_string());
        }
    }
}
