//! Bounds that both the parsers ([`super::args`]) and the error strings ([`super::errors`]) name.

/// Upper bound of every duration, argument or setting: ten years, far from any overflow of
/// unix ms.
pub const LIMIT_MS: i64 = 10 * 365 * 24 * 60 * 60 * 1000;
