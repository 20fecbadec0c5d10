//! dlock's lock rules, free of the Redis API.
//!
//! The module reads a resource out of the keyspace, asks these rules what to do, and applies the
//! answer; the model checker (`model/`) drives the very same functions with its own state, so a
//! change to a rule here is a change to what is model-checked.
//!
//! - [`clock`]: time as the rules see it (wall clock for tokens and deadlines, monotonic for the
//!   restart quarantine).
//! - [`holders`]: a resource and its holders, and the questions the rules ask of them.
//! - [`rules`]: what ACQUIRE, RELEASE, EXTEND and FENCE do, who a queue serves next, and when a
//!   ticket wounds a tentative grant.
//! - [`queue`]: the fair wait queue of one resource.
//! - [`sets`]: several resources of one node at once, all or nothing.
//! - [`tentative`]: the grants not yet committed by FENCE.
//! - [`gate`]: when a guarded write passes the token its data has seen.
//! - [`node`]: per-node state — the fencing counter and the quarantine — and token issuance.

pub mod clock;
pub mod gate;
pub mod holders;
pub mod node;
pub mod queue;
pub mod rules;
pub mod sets;
pub mod tentative;
#[doc(hidden)]
pub mod testing;

pub use clock::{Clock, SystemClock};
pub use holders::{Holder, Holders, Kind, Mine, Mode, Want};
pub use node::{Fence, GrantRefused, Node, Settings, TokenRefused, MAX_TOKEN, MAX_TOKEN_LEAD_US};
