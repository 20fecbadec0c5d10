//! What operators see: the counters behind `INFO dlock` ([`stats`]) and the section itself
//! ([`info`]).

pub mod info;
pub mod stats;
