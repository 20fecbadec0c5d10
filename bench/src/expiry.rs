//! Scenario 5: the holder dies without releasing. How long after its TTL deadline the next
//! waiter holds the lock, for scenario 3's in-process contenders: dlock's queue (the node hands
//! the lock over at the deadline itself), dlock's retry mode and rslock (both notice on their
//! next retry tick); and the Java harness's contenders (dlock's Java client, Redisson's locks:
//! the harness's `dies` scenario, the same measure). On 1 and 5 nodes,
//! contenders alternating within a round, the order reversed every other round, a fresh key per
//! sample.

use std::fmt::Write as _;
use std::time::Duration;

use crate::contention::contention_contenders;
use crate::external::External;
use crate::{median, percentile, Plan};

/// The dying holder's TTL.
const TTL: Duration = Duration::from_millis(100);

/// Lateness samples (µs after the deadline) per contender, on one node set.
pub struct ExpiryTable {
    pub nodes: usize,
    pub rows: Vec<(String, Vec<f64>)>,
}

/// `samples` deaths per contender per round.
pub async fn holder_dies(
    plan: &Plan,
    nodes: &[String],
    samples: usize,
    externals: &[External],
) -> ExpiryTable {
    let contenders = contention_contenders(nodes);
    let externals: Vec<&External> = externals
        .iter()
        .filter(|e| e.supports(nodes) && e.measures("dies"))
        .collect();
    let mut rows: Vec<(String, Vec<f64>)> = contenders
        .iter()
        .map(|(name, _)| name.clone())
        .chain(externals.iter().map(|e| e.name.to_string()))
        .map(|name| (name, Vec::new()))
        .collect();
    for round in 0..plan.rounds {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let Some((name, contender)) = contenders.get(i) else {
                let ext = externals[i - contenders.len()];
                let prefix = format!("dies:{}:{round}:{}", nodes.len(), ext.name);
                match ext.run(nodes, "dies", samples, 1, 0, &prefix) {
                    Ok(m) => rows[i].1.extend(m.latencies_us),
                    Err(e) => eprintln!("bench: [5. holder dies] {e}"),
                }
                progress(nodes, round, plan, &rows[i]);
                continue;
            };
            for sample in 0..samples {
                let key = format!("dies:{}:{round}:{name}:{sample}", nodes.len());
                match contender.after_holder_dies(&key, TTL).await {
                    Ok(late_us) => rows[i].1.push(late_us),
                    Err(e) => eprintln!("bench: [5. holder dies] {name}: {e}"),
                }
            }
            progress(nodes, round, plan, &rows[i]);
        }
    }
    ExpiryTable {
        nodes: nodes.len(),
        rows,
    }
}

fn progress(nodes: &[String], round: usize, plan: &Plan, (name, late): &(String, Vec<f64>)) {
    eprintln!(
        "bench: [5. holder dies, {} node(s)] round {}/{} {name}: p50 {:.0} µs late",
        nodes.len(),
        round + 1,
        plan.rounds,
        median(late.clone())
    );
}

impl ExpiryTable {
    /// The `## 5. ...` section of results.md.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "## 5. Holder dies: {} ms TTL, never released; the next holder's grant, µs after the deadline, {} node(s)\n\n\
             | contender | p50 µs late | p99 µs late | samples |\n|---|---|---|---|\n",
            TTL.as_millis(),
            self.nodes
        );
        for (name, late) in &self.rows {
            let (p50, p99) = (median(late.clone()), percentile(late.clone(), 99.0));
            let _ = writeln!(md, "| {name} | {p50:.0} | {p99:.0} | {} |", late.len());
        }
        md
    }

    /// The queue's p99 lateness against the 10 ms goal.
    pub fn goal(&self) -> String {
        let Some((name, late)) = self.rows.iter().find(|(n, _)| n.contains("queue")) else {
            return String::new();
        };
        let p99 = percentile(late.clone(), 99.0) / 1000.0;
        let verdict = if p99 <= 10.0 { "met" } else { "missed" };
        format!(
            "| holder dies: next grant p99 <= 10 ms after the deadline, {} node(s) | {p99:.1} ms ({name}) | {verdict} |\n",
            self.nodes
        )
    }
}
