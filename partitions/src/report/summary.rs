//! A run's report as the lines printed on stderr: its verdict, then what broke.

use std::collections::BTreeMap;

use crate::checkers::election;
use crate::checkers::linear::Linear;
use crate::report::document::linear_json;
use crate::run::spec::Spec;
use crate::run::Outcome;

/// The lines printed for a run: its verdict, then each anomaly (at most 10 of each kind).
pub fn summary(spec: &Spec, o: &Outcome) -> Vec<String> {
    let verdict = if o.valid() { "valid" } else { "INVALID" };
    let mut lines = vec![format!(
        "{}: {} ops, register {}, {} anomalies, {} expected overlaps -> {verdict} (expected {}) in {:.0?}",
        spec.name,
        o.ops.len(),
        linear_json(&o.linear)["verdict"].as_str().unwrap_or("?"),
        o.checked.anomalies.len() + o.problems.len(),
        o.checked.expected.len(),
        if spec.expect_valid { "valid" } else { "invalid" },
        o.elapsed,
    )];
    let terms = election::summary(&o.ops);
    if !terms.is_null() {
        lines.push(format!("  leaderships: {terms}"));
    }
    if let Linear::Invalid { ops } = &o.linear {
        lines.push("  register history without a linearization:".into());
        lines.extend(ops.iter().take(12).map(|l| format!("    {l}")));
    }
    let mut shown: BTreeMap<&str, usize> = BTreeMap::new();
    for a in o.checked.anomalies.iter().chain(&o.problems) {
        let n = shown.entry(a.kind).or_default();
        *n += 1;
        if *n <= 10 {
            lines.push(format!("  {} at {:.2} s: {}", a.kind, a.at_s, a.detail));
        }
    }
    lines
}
