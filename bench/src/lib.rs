//! Shared pieces of the dlock benchmarks.

use std::time::Duration;

pub mod cluster;
pub mod contenders;
pub mod contention;
pub mod expiry;
pub mod external;
pub mod report;

/// In-process contenders, by the name they are reported under.
pub type Named = Vec<(String, contenders::Contender)>;

/// How much each scenario measures: rounds (contenders alternating), ops per latency batch,
/// and the length of each throughput/contention batch.
pub struct Plan {
    pub rounds: usize,
    pub n: usize,
    pub duration: Duration,
}

/// Median of a small sample (the upper middle for even counts).
pub fn median(values: Vec<f64>) -> f64 {
    percentile(values, 50.0)
}

/// Nearest-rank percentile; NaN for an empty sample.
pub fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles_by_nearest_rank() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(hundred.clone(), 99.0), 99.0);
        assert_eq!(percentile(hundred, 50.0), 50.0);
        assert!(median(vec![]).is_nan());
    }
}
