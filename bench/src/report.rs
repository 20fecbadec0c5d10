//! `make bench`'s tables (docs/bench/clients.md) and chart (docs/bench/latency.svg) from the
//! measured samples.

use std::fmt::Write as _;

use crate::{median, percentile};

/// Latency samples (µs) per contender, pooled over rounds.
#[derive(Default)]
pub struct LatencyTable {
    pub rows: Vec<(String, Vec<f64>)>,
}

impl LatencyTable {
    pub fn add(&mut self, name: &str, samples: Vec<f64>) {
        match self.rows.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.extend(samples),
            None => self.rows.push((name.to_string(), samples)),
        }
    }

    pub fn p50(&self, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| median(s.clone()))
    }

    pub fn markdown(&self, baseline: &str) -> String {
        let base = self.p50(baseline).unwrap_or(f64::NAN);
        let mut out =
            format!("| contender | p50 µs | p99 µs | p50 vs {baseline} |\n|---|---|---|---|\n");
        for (name, samples) in &self.rows {
            let (p50, p99) = (median(samples.clone()), percentile(samples.clone(), 99.0));
            let _ = writeln!(out, "| {name} | {p50:.0} | {p99:.0} | {:.2}x |", p50 / base);
        }
        out
    }
}

/// Per-round rates per contender (median reported).
#[derive(Default)]
pub struct RateTable {
    pub rows: Vec<(String, Vec<f64>)>,
}

impl RateTable {
    pub fn add(&mut self, name: &str, rate: f64) {
        match self.rows.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.push(rate),
            None => self.rows.push((name.to_string(), vec![rate])),
        }
    }

    pub fn median_of(&self, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| median(r.clone()))
    }

    pub fn markdown(&self, unit: &str) -> String {
        let mut out =
            format!("| contender | {unit} (median of rounds) | rounds |\n|---|---|---|\n");
        for (name, rates) in &self.rows {
            let _ = writeln!(
                out,
                "| {name} | {:.0} | {} |",
                median(rates.clone()),
                rates.len()
            );
        }
        out
    }
}

/// A horizontal bar chart of p50 and p99 per contender.
pub fn latency_svg(title: &str, table: &LatencyTable) -> String {
    let rows: Vec<(&str, f64, f64)> = table
        .rows
        .iter()
        .map(|(n, s)| (n.as_str(), median(s.clone()), percentile(s.clone(), 99.0)))
        .collect();
    let max = rows.iter().map(|r| r.2).fold(1.0, f64::max);
    let (left, width, row_h) = (190.0, 560.0, 44.0);
    let height = 60.0 + row_h * rows.len() as f64;
    let mut svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{height}' font-family='sans-serif' font-size='12'>\n\
         <rect width='100%' height='100%' fill='white'/>\n<text x='10' y='20' font-size='14' font-weight='bold'>{title}</text>\n\
         <text x='{left}' y='40' fill='#1f77b4'>■ p50</text><text x='{}' y='40' fill='#ff7f0e'>■ p99 (µs)</text>\n",
        left + width + 140.0,
        left + 60.0
    );
    for (i, (name, p50, p99)) in rows.iter().enumerate() {
        let y = 50.0 + row_h * i as f64;
        let w50 = width * p50 / max;
        let w99 = width * p99 / max;
        let _ = write!(
            svg,
            "<text x='10' y='{}'>{name}</text>\n<rect x='{left}' y='{y}' width='{w50:.1}' height='16' fill='#1f77b4'/>\
             <text x='{:.1}' y='{}'>{p50:.0}</text>\n<rect x='{left}' y='{}' width='{w99:.1}' height='16' fill='#ff7f0e'/>\
             <text x='{:.1}' y='{}'>{p99:.0}</text>\n",
            y + 20.0,
            left + w50 + 4.0,
            y + 12.0,
            y + 18.0,
            left + w99 + 4.0,
            y + 30.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pool_samples_and_chart_has_a_bar_per_contender() {
        let mut t = LatencyTable::default();
        t.add("a", vec![1.0, 2.0]);
        t.add("a", vec![3.0]);
        t.add("b", vec![4.0]);
        assert_eq!(t.p50("a"), Some(2.0));
        assert!(t.markdown("a").contains("| b | 4 | 4 | 2.00x |"));
        assert_eq!(latency_svg("x", &t).matches("fill='#1f77b4'/>").count(), 2);
    }
}
