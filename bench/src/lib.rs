//! Shared pieces of the dlock benchmarks.

/// Median of a small sample (the middle value; the upper middle for even counts).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_picks_the_middle() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(super::median(vec![]).is_nan());
    }
}
