//! What every checker reports (`Anomaly`, `Checked`), and the invariants every lock workload's
//! history is held to alike: no write accepted after a newer token's, no lock() call lost.

use serde::Serialize;

use crate::history::{Kind, Op, F};

#[derive(Clone, Debug, Serialize)]
pub struct Anomaly {
    pub kind: &'static str,
    /// Seconds from the run's start.
    pub at_s: f64,
    pub detail: String,
}

/// A checker's findings.
pub struct Checked {
    pub anomalies: Vec<Anomaly>,
    /// Overlaps under a broken assumption: shown, not counted against the run.
    pub expected: Vec<Anomaly>,
}

/// A write accepted after a write of a larger token had been accepted (the later write sent
/// after the earlier one's reply: they did not race).
pub fn stale_writes(ops: &[Op], out: &mut Vec<Anomaly>, at: impl Fn(u64) -> f64) {
    let accepted: Vec<&Op> = ops
        .iter()
        .filter(|o| o.invoke.f == F::Cas && o.kind() == Kind::Ok)
        .collect();
    for b in &accepted {
        let token = b.invoke.token.unwrap_or(0);
        let sent = b
            .done
            .as_ref()
            .and_then(|d| d.write_ns)
            .unwrap_or(b.invoke.mono_ns);
        let newer = accepted
            .iter()
            .filter(|a| a.end_ns() < sent && a.invoke.token.unwrap_or(0) > token)
            .max_by_key(|a| a.invoke.token);
        if let Some(a) = newer {
            out.push(Anomaly {
                kind: "stale write accepted",
                at_s: at(b.end_ns()),
                detail: format!(
                    "process {} wrote {} under token {} after process {} had written under token {}",
                    b.invoke.process,
                    b.invoke.new.unwrap_or(0),
                    token,
                    a.invoke.process,
                    a.invoke.token.unwrap_or(0)
                ),
            });
        }
    }
}

/// A lock() call that never returned (its wait ran out 2 s before we gave up on it).
pub fn lost_waiters(ops: &[Op], out: &mut Vec<Anomaly>, at: impl Fn(u64) -> f64) {
    for op in ops.iter().filter(|o| o.invoke.f == F::Acquire) {
        if op.kind() == Kind::Info {
            out.push(Anomaly {
                kind: "lost waiter",
                at_s: at(op.invoke.mono_ns),
                detail: format!("process {}'s lock() call never returned", op.invoke.process),
            });
        }
    }
}
