//! What a scenario's record is judged to show (figures.rs, permits.rs), and whether that passes
//! (verdict.rs).

pub mod figures;
pub mod permits;
pub mod verdict;
