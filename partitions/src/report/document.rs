//! A run's report as a file: a JSON document (the faults' timeline, counts of operations by
//! outcome, the register's verdict, anomalies or "valid", latency with and without a fault in
//! force), and the history beside it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::checkers::election;
use crate::checkers::linear::Linear;
use crate::history::{Event, Kind, Op, F};
use crate::run::spec::Spec;
use crate::run::Outcome;
use crate::workloads::args::Workload;
use crate::workloads::shared::LIMIT;

fn counts(ops: &[Op]) -> Value {
    let mut by: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for op in ops {
        let mut f = format!("{:?}", op.invoke.f).to_lowercase();
        // The shared workload's grants are counted by side, a semaphore's as permits.
        if let Some(role) = op.invoke.role.filter(|_| op.invoke.f == F::Acquire) {
            f = format!("{f} {role:?}").to_lowercase();
        }
        let k = format!("{:?}", op.kind()).to_lowercase();
        *by.entry(f).or_default().entry(k).or_default() += 1;
    }
    json!(by)
}

/// Why operations failed or are unknown: each distinct message (cut at 400 characters, owners
/// and numbers as sent) and how often.
fn reasons(ops: &[Op]) -> Value {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for d in ops.iter().filter_map(|o| o.done.as_ref()) {
        if let Some(e) = &d.error {
            // Tokens and owners differ in every message: counted as one kind.
            let key: String = e
                .split(' ')
                .map(|w| {
                    if w.chars().filter(char::is_ascii_digit).count() >= 6 {
                        "N"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(400)
                .collect();
            *by.entry(format!("{:?} {:?}: {key}", d.f, d.kind).to_lowercase())
                .or_default() += 1;
        }
    }
    json!(by)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Completed lock() calls' latency in ms, split by whether a fault was in force at the call.
fn latency(o: &Outcome) -> Value {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for op in o.ops.iter().filter(|op| op.invoke.f == F::Acquire) {
        let Some(done) = op.done.as_ref().filter(|d| d.kind != Kind::Info) else {
            continue;
        };
        let at = op.invoke.mono_ns;
        let window = o
            .windows
            .iter()
            .find(|w| w.start_ns <= at && at <= w.end_ns);
        let key = window.map_or("no fault".to_string(), |w| w.name.clone());
        by.entry(key)
            .or_default()
            .push((done.mono_ns - op.invoke.mono_ns) as f64 / 1e6);
    }
    let rows: BTreeMap<String, Value> = by
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(f64::total_cmp);
            let row = json!({"calls": v.len(), "p50_ms": percentile(&v, 0.5),
                "p99_ms": percentile(&v, 0.99), "max_ms": v.last().copied().unwrap_or(0.0)});
            (k, row)
        })
        .collect();
    json!(rows)
}

pub fn linear_json(l: &Linear) -> Value {
    match l {
        // The semaphore workload does not touch the register.
        Linear::Valid { ops: 0 } => json!({"verdict": "not used", "ops": 0}),
        Linear::Valid { ops } => json!({"verdict": "linearizable", "ops": ops}),
        Linear::Invalid { ops } => json!({"verdict": "NOT linearizable", "segment": ops}),
        Linear::Unknown { ops } => json!({"verdict": "unknown (search budget spent)", "ops": ops}),
    }
}

pub fn document(spec: &Spec, o: &Outcome) -> Value {
    let secs = |ns: u64| ns.saturating_sub(o.t0) as f64 / 1e9;
    let faults: Vec<Value> = o
        .windows
        .iter()
        .map(|w| {
            json!({"fault": w.name, "start_s": secs(w.start_ns), "end_s": secs(w.end_ns),
                "start_wall_ms": w.start_wall_ms, "breaks": w.breaks, "skipped": w.skipped})
        })
        .collect();
    let mut anomalies = o.checked.anomalies.clone();
    anomalies.extend(o.problems.iter().cloned());
    json!({
        "run": spec.name,
        "about": spec.about,
        "config": {"topology": format!("{:?}", spec.topology), "clients": spec.clients, "ttl_ms": spec.ttl_ms, "hold_ms": spec.hold_ms,
            "gate": !spec.bypass_gate, "aof": spec.node.aof,
            "quarantine_ms": spec.node.quarantine_ms, "workload": spec.workload,
            "semaphore_limit_checked": (spec.workload == Workload::Semaphore).then_some(LIMIT),
            "misbehave": spec.misbehave,
            "libraries": (1..=spec.clients).map(|i| format!("{:?}", spec.client(i))).collect::<Vec<_>>()},
        "expected": if spec.expect_valid { "valid" } else { "invalid" },
        "result": if o.valid() { "valid" } else { "invalid" },
        "seconds": o.elapsed.as_secs_f64(),
        "faults": faults,
        "ops": counts(&o.ops),
        "reasons": reasons(&o.ops),
        "register": linear_json(&o.linear),
        "anomalies": anomalies,
        "expected_under_broken_assumptions": o.checked.expected,
        "latency_acquire": latency(o),
        "leaderships": election::summary(&o.ops),
    })
}

/// Writes `<dir>/<run>.json`.
pub fn write(dir: &Path, spec: &Spec, doc: &Value) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.json", spec.name));
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `<dir>/<run>.history.jsonl`: every event, in time order, as the workers printed
/// them (Jepsen keeps its history beside the verdict, to read an anomaly's surroundings).
pub fn write_history(dir: &Path, spec: &Spec, ops: &[Op]) -> Result<(), String> {
    // A loss signal is its own invocation and completion: printed once.
    let mut events: Vec<&Event> = ops
        .iter()
        .flat_map(|o| {
            let done = o.done.as_ref().filter(|_| o.invoke.f != F::Lost);
            [Some(&o.invoke), done]
        })
        .flatten()
        .collect();
    events.sort_by_key(|e| e.mono_ns);
    let mut text = String::new();
    for e in events {
        text += &serde_json::to_string(e).map_err(|e| e.to_string())?;
        text.push('\n');
    }
    let path = dir.join(format!("{}.history.jsonl", spec.name));
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}
