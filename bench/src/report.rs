//! `make bench`'s tables (docs/bench/clients.md) and chart (docs/bench/latency.svg) from the
//! measured samples.

use std::fmt::Write as _;

use crate::external::{GO_CLIENT, JAVA_CLIENT, NODE_CLIENT, PYTHON_CLIENT};
use crate::{median, percentile};

/// dlock-client, fencing on, the token never read: no commit (docs/protocol.md §4.1).
pub const UNUSED: &str = "dlock (token unused)";
/// The same, each lock's token read before the release: the commit paid.
pub const USED: &str = "dlock (token used)";
/// One PING to every node at once: a round trip's floor.
pub const FLOOR: &str = "PING fan-out (1 RTT floor)";

/// Latency samples (µs) per contender: pooled over rounds (for p99), and each round's p50 (the
/// p50 reported is the median of the rounds' p50s, with their spread: single runs flip).
#[derive(Default)]
pub struct LatencyTable {
    pub rows: Vec<(String, Vec<f64>)>,
    /// Each round's p50, per contender.
    pub rounds: Vec<(String, Vec<f64>)>,
}

impl LatencyTable {
    /// One round's samples of `name`.
    pub fn add(&mut self, name: &str, samples: Vec<f64>) {
        let p50 = median(samples.clone());
        match self.rounds.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.push(p50),
            None => self.rounds.push((name.to_string(), vec![p50])),
        }
        match self.rows.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.extend(samples),
            None => self.rows.push((name.to_string(), samples)),
        }
    }

    /// The median of the rounds' p50s.
    pub fn p50(&self, name: &str) -> Option<f64> {
        self.round_p50s(name).map(|r| median(r.to_vec()))
    }

    fn round_p50s(&self, name: &str) -> Option<&[f64]> {
        let found = self.rounds.iter().find(|(n, _)| n == name);
        found.map(|(_, r)| r.as_slice())
    }

    /// The lowest and highest round p50.
    pub fn spread(&self, name: &str) -> Option<(f64, f64)> {
        let rounds = self.round_p50s(name)?;
        let low = rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let high = rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((low, high))
    }

    pub fn markdown(&self, baseline: &str) -> String {
        let base = self.p50(baseline).unwrap_or(f64::NAN);
        let mut out = format!(
            "| contender | p50 µs (median of rounds) | rounds' p50 µs | p99 µs | p50 vs {baseline} |\n|---|---|---|---|---|\n"
        );
        for (name, samples) in &self.rows {
            let p50 = self.p50(name).unwrap_or(f64::NAN);
            let (low, high) = self.spread(name).unwrap_or((f64::NAN, f64::NAN));
            let p99 = percentile(samples.clone(), 99.0);
            let _ = writeln!(
                out,
                "| {name} | {p50:.0} | {low:.0}-{high:.0} | {p99:.0} | {:.2}x |",
                p50 / base
            );
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
        let mut out = format!(
            "| contender | {unit} (median of rounds) | rounds' range | rounds |\n|---|---|---|---|\n"
        );
        for (name, rates) in &self.rows {
            let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let high = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let _ = writeln!(
                out,
                "| {name} | {:.0} | {low:.0}-{high:.0} | {} |",
                median(rates.clone()),
                rates.len()
            );
        }
        out
    }
}

/// Scenario 1's and 2's goals (docs/bench/clients.md), as rows of a table.
pub fn client_goals(s1: &LatencyTable, s2: &RateTable) -> String {
    let floor = s1.p50(FLOOR).unwrap_or(f64::NAN);
    let unused = s1.p50(UNUSED).unwrap_or(f64::NAN);
    let used = s1.p50(USED).unwrap_or(f64::NAN);
    let off = s1.p50("dlock (fencing off)").unwrap_or(f64::NAN);
    let verdict = |ok: bool| if ok { "met" } else { "missed" };
    let mut md = String::from(
        "\n## Goals (ratios from this run; p50s are medians of the rounds' p50s)\n\n| goal | measured | result |\n|---|---|---|\n",
    );
    let mut row = |goal: String, ratio: f64, ok: bool| {
        md += &format!("| {goal} | {ratio:.2}x | {} |\n", verdict(ok));
    };
    row(
        "fencing off <= 1.2x floor x 2 RTT".into(),
        off / (2.0 * floor),
        off <= 2.4 * floor,
    );
    row(
        format!("{UNUSED} <= 1.2x floor x 2 RTT"),
        unused / (2.0 * floor),
        unused <= 2.4 * floor,
    );
    row(
        format!("{USED} <= 1.2x floor x 3 RTT"),
        used / (3.0 * floor),
        used <= 3.6 * floor,
    );
    for other in ["rslock", "node-redlock"] {
        if let Some(p50) = s1.p50(other) {
            row(
                format!("{UNUSED} p50 <= {other}'s (5 nodes)"),
                unused / p50,
                unused <= p50,
            );
        }
    }
    for other in ["rslock", "node-redlock", "pottery"] {
        if let Some(p50) = s1.p50(other) {
            let goal = format!("p50 >= 2x faster than {other} (5 nodes, token unused)");
            row(goal, p50 / unused, p50 >= 2.0 * unused);
        }
    }
    for client in [NODE_CLIENT, GO_CLIENT, PYTHON_CLIENT, JAVA_CLIENT] {
        if let Some(p50) = s1.p50(client) {
            let goal = format!("{client} p50 <= 1.2x the Rust client's ({UNUSED}, 5 nodes)");
            row(goal, p50 / unused, p50 <= 1.2 * unused);
        }
    }
    if let (Some(python), Some(pottery)) = (s1.p50(PYTHON_CLIENT), s1.p50("pottery")) {
        let goal = format!("{PYTHON_CLIENT} p50 >= 3x faster than pottery (5 nodes)");
        row(goal, pottery / python, pottery >= 3.0 * python);
    }
    let ours = s2.median_of(UNUSED).unwrap_or(0.0);
    if let Some(rslock) = s2.median_of("rslock") {
        row(
            format!("{UNUSED} pairs/s >= rslock's"),
            ours / rslock,
            ours >= rslock,
        );
    }
    let best = ["rslock", "node-redlock", "pottery"]
        .iter()
        .filter_map(|n| s2.median_of(n).map(|r| (n, r)))
        .fold(
            ("none", 0.0),
            |best, (n, r)| if r > best.1 { (n, r) } else { best },
        );
    let goal = format!("throughput >= 2x the best other ({})", best.0);
    row(goal, ours / best.1, ours >= 2.0 * best.1);
    md
}

/// A horizontal bar chart of p50 and p99 per contender.
pub fn latency_svg(title: &str, table: &LatencyTable) -> String {
    let rows: Vec<(&str, f64, f64)> = table
        .rows
        .iter()
        .map(|(n, s)| {
            let p50 = table.p50(n).unwrap_or_else(|| median(s.clone()));
            (n.as_str(), p50, percentile(s.clone(), 99.0))
        })
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
        assert_eq!(
            t.p50("a"),
            Some(1.0),
            "the median of the rounds' p50s (1 and 3)"
        );
        assert_eq!(t.spread("a"), Some((1.0, 3.0)));
        assert!(t.markdown("a").contains("| b | 4 | 4-4 | 4 | 4.00x |"));
        assert_eq!(latency_svg("x", &t).matches("fill='#1f77b4'/>").count(), 2);
    }
}
