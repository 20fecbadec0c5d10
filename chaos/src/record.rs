//! What a lock scenario records, the history its checker judges (checkers/figures.rs): each
//! critical section as its worker saw it, and each write as the resource saw it
//! (fixture/resource.rs keeps them; workloads/workers.rs reports the sections).

use std::time::Instant;

/// One critical section as the worker saw it.
#[derive(Debug, Clone)]
pub struct Section {
    pub token: u64,
    /// When the client finished acquiring (orders grants for the token-order check).
    pub granted_at: Instant,
    /// First and last write.
    pub start: Instant,
    pub end: Instant,
}

/// One write as the resource saw it.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    pub token: u64,
    pub accepted: bool,
}

/// What the resource recorded: the gated writes (accepted ones in the server's order, then the
/// refused ones) and the tokens of the straight writes, in the server's order.
pub struct Record {
    pub sections: Vec<Section>,
    pub guarded: Vec<Write>,
    pub unguarded: Vec<u64>,
    /// Replies that were neither a pass nor STALE (the resource is never faulted: expect 0).
    pub errors: usize,
}
