//! Bounds that both the parsers ([`super::args`]) and the error strings ([`super::errors`]) name.

/// Upper bound of every duration, argument or setting: ten years, far from any overflow of
/// unix ms.
pub const LIMIT_MS: i64 = 10 * 365 * 24 * 60 * 60 * 1000;

/// How far the clocks of two nodes may disagree when one's deadlines arrive on the other
/// (RESTORE, MIGRATE, a replica's stream), in ms: a restored lease may end this much later than
/// the receiving node could grant.
pub const CLOCK_SLACK_MS: u64 = 60_000;

/// The longest `DLOCK.OBSERVE ... TIMEOUT`: one day (an observer asks again after it).
pub const OBSERVE_TIMEOUT_MS: i64 = 24 * 60 * 60 * 1000;
