//! What a run leaves for people: the JSON report and the history beside it (document.rs), the
//! lines on stderr (summary.rs), the PNG timeline (chart.rs). The verdict itself is the
//! outcome's (run/, `Outcome::valid`).

pub mod chart;
pub mod document;
pub mod summary;
