//! dlock's lock rules, free of the Redis API.
//!
//! The module reads a lock out of the keyspace, asks these rules what to do, and applies the
//! answer; the model checker (`model/`) drives the very same functions with its own state, so a
//! change to a rule here is a change to what is model-checked.
//!
//! - [`clock`]: time as the rules see it (wall clock for tokens and deadlines, monotonic for the
//!   restart quarantine).
//! - [`node`]: per-node state — the fencing counter and the quarantine — and token issuance.
//! - [`lock`]: what ACQUIRE, RELEASE, EXTEND and FENCE do to one lock.
//! - [`wait`]: fair waiting: the queue, who is served next, when a ticket wounds a grant.

pub mod clock;
pub mod group;
pub mod lock;
pub mod node;
#[doc(hidden)]
pub mod testing;
pub mod wait;

pub use clock::{Clock, SystemClock};
pub use lock::{Acquire, Fence, Held, Release};
pub use node::{GrantRefused, Node, Settings, TokenRefused, MAX_TOKEN, MAX_TOKEN_LEAD_US};
