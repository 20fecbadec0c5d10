//! Scenario 3: 32 tasks contend for one resource, each holding it 1 ms; handoffs per second and
//! the wait distribution per contender. Run once per node set (1 node, 5 nodes); contenders
//! alternate within a round and the order is reversed every other round; each contender gets a
//! fresh key per round.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dlock_client::WaitMode;

use crate::contenders::Contender;
use crate::external::{
    External, GO_CLIENT, JAVA_CLIENT, JAVA_TOKEN_USED, NODE_CLIENT, PYTHON_CLIENT, REDISSON_FAIR,
    REDISSON_LOCK, REDSYNC,
};
use crate::{median, percentile, Named, Plan};

/// Tasks (threads, for the externals) contending for the one resource.
pub const TASKS: usize = 32;
/// How long each acquirer holds the resource.
const HOLD: Duration = Duration::from_millis(1);

/// The in-process contenders of scenario 3; the installed externals that support the node count
/// are measured next to them.
pub fn contention_contenders(nodes: &[String]) -> Named {
    vec![
        (
            "dlock (queue, the default)".into(),
            Contender::dlock_waiting(nodes, true, WaitMode::Queue),
        ),
        (
            "dlock (retry)".into(),
            Contender::dlock_waiting(nodes, true, WaitMode::Retry),
        ),
        ("rslock".into(), Contender::rslock(nodes)),
    ]
}

/// One contender's handoffs per second (one rate per round) and waits (µs, pooled over rounds).
pub struct ContentionRow {
    pub name: String,
    pub handoffs: Vec<f64>,
    pub waits_us: Vec<f64>,
}

impl ContentionRow {
    fn new(name: &str) -> ContentionRow {
        ContentionRow {
            name: name.into(),
            handoffs: vec![],
            waits_us: vec![],
        }
    }

    pub fn handoffs_per_s(&self) -> f64 {
        median(self.handoffs.clone())
    }

    /// Wait p99 / wait p50.
    pub fn fairness(&self) -> f64 {
        percentile(self.waits_us.clone(), 99.0) / median(self.waits_us.clone())
    }
}

/// Scenario 3 on one node set.
pub struct ContentionTable {
    pub nodes: usize,
    pub rows: Vec<ContentionRow>,
}

enum Runner<'a> {
    InProcess(&'a Contender),
    External(&'a External),
}

/// Runs scenario 3 against `nodes` for every in-process contender and every external that
/// supports that many nodes.
pub async fn contention(plan: &Plan, nodes: &[String], externals: &[External]) -> ContentionTable {
    let contenders = contention_contenders(nodes);
    let runners: Vec<(String, Runner)> = contenders
        .iter()
        .map(|(name, c)| (name.clone(), Runner::InProcess(c)))
        .chain(
            externals
                .iter()
                .filter(|e| e.supports(nodes))
                .map(|e| (e.name.to_string(), Runner::External(e))),
        )
        .collect();
    let mut table = ContentionTable {
        nodes: nodes.len(),
        rows: runners
            .iter()
            .map(|(name, _)| ContentionRow::new(name))
            .collect(),
    };
    for round in 0..plan.rounds {
        let mut order: Vec<usize> = (0..runners.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let (name, runner) = &runners[i];
            let key = format!("contended:{}:{round}:{name}", nodes.len());
            let measured = match runner {
                Runner::InProcess(c) => Ok(in_process(c, &key, plan.duration).await),
                Runner::External(e) => external(e, nodes, &key, plan.duration),
            };
            match measured {
                Ok((rate, waits)) => {
                    eprintln!(
                        "bench: [3. contention, {TASKS} tasks, {}] round {}/{} {name}: {rate:.0} handoffs/s",
                        table.node_label(),
                        round + 1,
                        plan.rounds
                    );
                    table.rows[i].handoffs.push(rate);
                    table.rows[i].waits_us.extend(waits);
                }
                Err(e) => eprintln!("bench: {e}"),
            }
        }
    }
    table.rows.retain(|row| !row.handoffs.is_empty());
    table
}

/// `TASKS` tasks contend for `key` until `duration` is over: (handoffs/s, waits in µs).
async fn in_process(c: &Contender, key: &str, duration: Duration) -> (f64, Vec<f64>) {
    let waits = Mutex::new(Vec::new());
    let started = Instant::now();
    let deadline = started + duration;
    let tasks = (0..TASKS).map(|_| async {
        while Instant::now() < deadline {
            if let Ok(w) = c.contend(key, HOLD).await {
                waits.lock().unwrap().push(w.as_micros() as f64);
            }
        }
    });
    futures::future::join_all(tasks).await;
    let waits = waits.into_inner().unwrap();
    (waits.len() as f64 / started.elapsed().as_secs_f64(), waits)
}

fn external(
    ext: &External,
    nodes: &[String],
    prefix: &str,
    duration: Duration,
) -> Result<(f64, Vec<f64>), String> {
    let ms = duration.as_millis() as u64;
    let m = ext.run(nodes, "contention", 0, TASKS, ms, prefix)?;
    Ok((m.ops / m.seconds, m.latencies_us))
}

impl ContentionTable {
    fn node_label(&self) -> String {
        match self.nodes {
            1 => "1 node".into(),
            n => format!("{n} nodes"),
        }
    }

    /// The `## 3. ...` section of results.md.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "## 3. Contention: {TASKS} tasks, one resource, each holds it 1 ms, {}\n\n\
             | contender | handoffs/s (median) | wait p50 µs | wait p99 µs | fairness p99/p50 |\n|---|---|---|---|---|\n",
            self.node_label()
        );
        for row in &self.rows {
            let (p50, p99) = (
                median(row.waits_us.clone()),
                percentile(row.waits_us.clone(), 99.0),
            );
            let _ = writeln!(
                md,
                "| {} | {:.0} | {p50:.0} | {p99:.0} | {:.1} |",
                row.name,
                row.handoffs_per_s(),
                row.fairness()
            );
        }
        md
    }

    /// Goal rows: the best Rust dlock row's handoffs/s against 2x the best non-dlock row's, and
    /// the fairest Rust dlock row's wait p99/p50 against `max_fairness`; the Python client has a
    /// goal row of its own.
    pub fn goals(&self, max_fairness: f64) -> String {
        let verdict = |ok: bool| if ok { "met" } else { "missed" };
        let dlock = |r: &&ContentionRow| r.name.starts_with("dlock");
        let ours: Vec<&ContentionRow> = self
            .rows
            .iter()
            .filter(|r| {
                dlock(r)
                    && ![
                        PYTHON_CLIENT,
                        NODE_CLIENT,
                        GO_CLIENT,
                        JAVA_CLIENT,
                        JAVA_TOKEN_USED,
                    ]
                    .contains(&r.name.as_str())
            })
            .collect();
        let others: Vec<&ContentionRow> = self.rows.iter().filter(|r| !dlock(r)).collect();
        let label = self.node_label();
        let mut md = String::new();
        let fastest = highest(&ours, ContentionRow::handoffs_per_s);
        let best_other = highest(&others, ContentionRow::handoffs_per_s);
        if let (Some(ours), Some(other)) = (fastest, best_other) {
            let ratio = ours.handoffs_per_s() / other.handoffs_per_s();
            let _ = writeln!(
                md,
                "| contention handoffs/s >= 2x the best other ({}), {label} | {ratio:.2}x ({}) | {} |",
                other.name,
                ours.name,
                verdict(ratio >= 2.0)
            );
        }
        let named = |name: &str| self.rows.iter().find(|r| r.name == name);
        if let (Some(python), Some(prl)) = (named(PYTHON_CLIENT), named("python-redis-lock")) {
            let ratio = python.handoffs_per_s() / prl.handoffs_per_s();
            let _ = writeln!(
                md,
                "| {PYTHON_CLIENT} contention handoffs/s >= 2x python-redis-lock, {label} | {ratio:.2}x | {} |",
                verdict(ratio >= 2.0)
            );
        }
        if let (Some(node), Some(redlock)) = (named(NODE_CLIENT), named("node-redlock")) {
            let ratio = node.handoffs_per_s() / redlock.handoffs_per_s();
            let _ = writeln!(
                md,
                "| {NODE_CLIENT} contention handoffs/s >= node-redlock's, {label} | {ratio:.2}x | {} |",
                verdict(ratio >= 1.0)
            );
            let fairness = node.fairness();
            let _ = writeln!(
                md,
                "| {NODE_CLIENT} contention wait p99/p50 <= {max_fairness} ({label}) | {fairness:.1} | {} |",
                verdict(fairness <= max_fairness)
            );
        }
        if let (Some(go), Some(redsync)) = (named(GO_CLIENT), named(REDSYNC)) {
            let _ = writeln!(
                md,
                "| {GO_CLIENT} contention wait p99/p50 <= 3 ({label}; {REDSYNC}, polling: {:.1}) | {:.1} | {} |",
                redsync.fairness(),
                go.fairness(),
                verdict(go.fairness() <= 3.0)
            );
        }
        if let Some(java) = named(JAVA_CLIENT) {
            let peers: Vec<String> = [REDISSON_LOCK, REDISSON_FAIR]
                .iter()
                .filter_map(|n| named(n).map(|r| format!("{n}: {:.1}", r.fairness())))
                .collect();
            let _ = writeln!(
                md,
                "| {JAVA_CLIENT} contention wait p99/p50 <= 2 ({label}; {}) | {:.1} | {} |",
                peers.join(", "),
                java.fairness(),
                verdict(java.fairness() <= 2.0)
            );
        }
        if let Some(fairest) = highest(&ours, |r| -r.fairness()) {
            let fairness = fairest.fairness();
            let _ = writeln!(
                md,
                "| contention wait p99/p50 <= {max_fairness} ({label}) | {fairness:.1} ({}) | {} |",
                fairest.name,
                verdict(fairness <= max_fairness)
            );
        }
        md
    }
}

/// The row with the highest `key`.
fn highest<'a>(
    rows: &[&'a ContentionRow],
    key: impl Fn(&ContentionRow) -> f64,
) -> Option<&'a ContentionRow> {
    rows.iter()
        .copied()
        .max_by(|a, b| key(a).total_cmp(&key(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, rate: f64, waits: Vec<f64>) -> ContentionRow {
        ContentionRow {
            name: name.into(),
            handoffs: vec![rate],
            waits_us: waits,
        }
    }

    #[test]
    fn goals_compare_the_best_dlock_row_with_the_best_other() {
        let table = ContentionTable {
            nodes: 1,
            rows: vec![
                row("dlock (fencing on)", 900.0, vec![10.0, 10.0, 30.0]),
                row("dlock (other)", 500.0, vec![10.0, 10.0, 15.0]),
                row("rslock", 300.0, vec![1.0, 1.0, 1.0]),
                row("python-redis-lock", 400.0, vec![1.0]),
                // The fastest and fairest row, but the Python client has its own goal row.
                row(PYTHON_CLIENT, 950.0, vec![10.0, 10.0, 10.0]),
                // So does the Node client, against node-redlock.
                row(NODE_CLIENT, 990.0, vec![10.0, 10.0, 10.0]),
                row("node-redlock", 360.0, vec![1.0, 1.0, 40.0]),
            ],
        };
        let goals = table.goals(2.0);
        assert!(goals.contains(
            "best other (python-redis-lock), 1 node | 2.25x (dlock (fencing on)) | met |"
        ));
        assert!(goals.contains("p99/p50 <= 2 (1 node) | 1.5 (dlock (other)) | met |"));
        assert!(goals.contains(
            "| dlock (python) contention handoffs/s >= 2x python-redis-lock, 1 node | 2.38x | met |"
        ));
        assert!(goals.contains(
            "| dlock (node) contention handoffs/s >= node-redlock's, 1 node | 2.75x | met |"
        ));
        assert!(
            goals.contains("| dlock (node) contention wait p99/p50 <= 2 (1 node) | 1.0 | met |")
        );
        assert!(table.markdown().contains("1 ms, 1 node\n"));
    }
}
