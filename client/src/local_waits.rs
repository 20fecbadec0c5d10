//! Many local waiters, few server waits: a queued `lock()` waits on the nodes on a connection of
//! its own (a blocking `DLOCK.ACQUIRE ... WAIT`), so a thousand tasks of one process waiting for
//! one resource would hold a thousand blocked connections on every node. One manager therefore
//! keeps at most one server-side wait per resource: the other callers queue here, in the process,
//! first come first served, and each takes its turn on the nodes when the one before it is granted
//! or gives up. The turn covers the wait only, never the hold: a granted caller hands the turn on
//! at once, so shared holds and semaphore permits are still granted together.
//!
//! Fairness across processes is per process at a time, not per task: a process has one waiter in
//! a resource's queue on the nodes, and its next one joins at the back once that one is served.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The resources this manager waits for on the nodes, each with its queue of local callers.
#[derive(Default)]
pub struct LocalWaits {
    turns: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

/// The right to wait on the nodes for one resource; handed to the next local caller on drop.
pub struct Turn {
    permit: Option<OwnedSemaphorePermit>,
    resource: String,
    turns: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

impl LocalWaits {
    /// Waits up to `left` for `resource`'s turn (a Tokio semaphore is first come first served);
    /// `None` when the time ran out first.
    pub async fn turn(&self, resource: &str, left: Duration) -> Option<Turn> {
        let queue = {
            let mut turns = self
                .turns
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            turns
                .entry(resource.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(1)))
                .clone()
        };
        let permit = tokio::time::timeout(left, queue.acquire_owned()).await;
        let turn = Turn {
            // The semaphore is never closed: an error cannot happen, and is treated as no turn.
            permit: permit.ok().and_then(Result::ok),
            resource: resource.to_string(),
            turns: self.turns.clone(),
        };
        // A caller that gave up still drops its Turn, so an idle queue is forgotten either way.
        turn.permit.is_some().then_some(turn)
    }

    /// How many resources have callers waiting or on the nodes (for tests).
    #[cfg(test)]
    fn resources(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut turns = self
            .turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Only the map's own reference left: nobody waits or holds the turn, the entry goes
        // (under the lock, so no caller can be cloning it meanwhile).
        if turns
            .get(&self.resource)
            .is_some_and(|queue| Arc::strong_count(queue) == 1)
        {
            turns.remove(&self.resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn one_caller_per_resource_waits_at_a_time_in_arrival_order() {
        let waits = Arc::new(LocalWaits::default());
        let first = waits.turn("r", Duration::from_secs(1)).await.expect("free");
        let order = Arc::new(Mutex::new(Vec::new()));
        let inside = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let (waits, order, inside) = (waits.clone(), order.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                let turn = waits.turn("r", Duration::from_secs(5)).await;
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two turns at once"
                );
                order.lock().expect("order").push(i);
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                drop(turn.expect("a turn within 5 s"));
            }));
            tokio::time::sleep(Duration::from_millis(10)).await; // arrive in order
        }
        let other = waits.turn("s", Duration::from_millis(50)).await;
        assert!(other.is_some(), "another resource is not queued behind r");
        drop(other);
        drop(first);
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(*order.lock().expect("order"), vec![0, 1, 2, 3, 4]);
        assert_eq!(waits.resources(), 0, "idle queues are forgotten");
    }

    #[tokio::test]
    async fn a_caller_whose_time_runs_out_gets_no_turn_and_leaves_nothing_behind() {
        let waits = LocalWaits::default();
        let held = waits.turn("r", Duration::from_secs(1)).await.expect("free");
        assert!(waits.turn("r", Duration::from_millis(20)).await.is_none());
        drop(held);
        assert_eq!(waits.resources(), 0);
        assert!(waits.turn("r", Duration::from_millis(20)).await.is_some());
    }
}
