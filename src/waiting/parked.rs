//! A parked client's handle and how its wait ended: what the queues keep and what every path that
//! ends a wait uses to answer it. Knows nothing of queues, so the queues and the blocked-client
//! callbacks both build on it.

use std::os::raw::c_void;
use std::ptr::NonNull;
use std::time::Instant;

use redis_module::raw;

/// How a wait ended.
#[derive(Debug)]
pub enum Outcome {
    /// The lock was handed over with this token.
    Granted(u64),
    /// Withdrawn (RELEASE by the same owner, or the same owner asked again): nil.
    Withdrawn,
    /// Ended with an error (the node became a replica; the node cannot grant).
    Failed(String),
}

/// A parked client, as a queue keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parked {
    client: NonNull<raw::RedisModuleBlockedClient>,
    pub since: Instant,
}

impl Parked {
    /// Identifies the parked client in the callbacks.
    pub fn id(&self) -> usize {
        self.client.as_ptr() as usize
    }

    /// Answers the client: from the next reply callback (or a timeout callback racing it).
    pub fn answer(self, outcome: Outcome) {
        let Some(unblock) = crate::api!(RedisModule_UnblockClient) else {
            return;
        };
        let data = Box::into_raw(Box::new(outcome)).cast::<c_void>();
        // SAFETY: the handle came from RedisModule_BlockClient and was not answered before
        // (see the module docs); Redis owns `data` from here and frees it with `free_outcome`.
        unsafe { unblock(self.client.as_ptr(), data) };
    }

    /// Frees a handle whose client needs no answer (timed out, disconnected): Redis leaves
    /// that to the module for clients not blocked on keys.
    pub(super) fn release_handle(self) {
        if let Some(unblock) = crate::api!(RedisModule_UnblockClient) {
            // SAFETY: the handle is live and was just taken out of its queue, so no other path
            // unblocks it.
            unsafe { unblock(self.client.as_ptr(), std::ptr::null_mut()) };
        }
    }
}

/// The handle `RedisModule_BlockClient` gave, parked now.
pub(super) fn parked_now(client: NonNull<raw::RedisModuleBlockedClient>) -> Parked {
    Parked {
        client,
        since: Instant::now(),
    }
}
