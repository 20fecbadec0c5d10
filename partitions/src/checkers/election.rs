//! Leader election's invariants, read from the history of the election workload
//! (workloads/election.rs), added to the mutex's (lock.rs, whose stale-write check applies to
//! the leaders' CAS operations as they are: the epoch is their token; the register's check,
//! linear.rs, applies as it is: each CAS is one operation):
//!
//! - overlapping leaderships: two processes believed they led at the same time, each from its
//!   campaign's reply to the earliest of its resignation (invoked), its loss signal, or its
//!   last recorded event (a process that ended believes nothing). Expected, not an anomaly,
//!   while a fault that breaks an assumption is in force or within a TTL after it.
//! - epoch order: a campaign that began after another had been won must carry a larger epoch.

use serde_json::{json, Value};

use crate::checkers::common::{Anomaly, Checked};
use crate::history::{Kind, Op, Window, F};

/// How a leadership ended, as its holder saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Resigned,
    /// The library's loss signal (renew deadline missed, extension refused, or a STALE write).
    Lost,
    /// Neither: the process's last event (it ended, or was killed, still leading).
    LastEvent,
}

/// One leadership as its holder believed it.
#[derive(Clone, Debug)]
pub struct Term {
    pub process: u32,
    pub epoch: u64,
    /// When its campaign was invoked, and when it returned (won).
    pub invoked: u64,
    pub won: u64,
    pub until: u64,
    pub end: End,
}

/// The leaderships of the history, in the order they were won.
pub fn terms(ops: &[Op]) -> Vec<Term> {
    let mut out: Vec<Term> = ops.iter().filter_map(|op| term(ops, op)).collect();
    out.sort_by_key(|t| t.won);
    out
}

fn term(ops: &[Op], op: &Op) -> Option<Term> {
    let done = op.done.as_ref().filter(|d| d.kind == Kind::Ok)?;
    if op.invoke.f != F::Campaign {
        return None;
    }
    let (process, epoch, won) = (op.invoke.process, done.token.unwrap_or(0), done.mono_ns);
    // This term's own events: the same process, the same epoch, after the win.
    let own = |f: F| {
        ops.iter()
            .filter(|o| o.invoke.process == process && o.invoke.f == f)
            .filter(|o| o.invoke.token == Some(epoch) && o.invoke.mono_ns >= won)
            .map(|o| o.invoke.mono_ns)
            .min()
    };
    let last = ops
        .iter()
        .filter(|o| o.invoke.process == process)
        .flat_map(|o| [Some(o.invoke.mono_ns), o.done.as_ref().map(|d| d.mono_ns)])
        .flatten()
        .max()
        .unwrap_or(won);
    let ends = [
        (own(F::Resign), End::Resigned),
        (own(F::Lost), End::Lost),
        (Some(last), End::LastEvent),
    ];
    let (until, end) = ends
        .iter()
        .filter_map(|(at, end)| at.map(|at| (at, *end)))
        .min_by_key(|(at, _)| *at)?;
    Some(Term {
        process,
        epoch,
        invoked: op.invoke.mono_ns,
        won,
        until,
        end,
    })
}

/// Adds the election's anomalies (and the overlaps a broken assumption explains) to `c`.
pub fn check(ops: &[Op], faults: &[Window], t0: u64, ttl_ns: u64, c: &mut Checked) {
    let at = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let terms = terms(ops);
    for (i, a) in terms.iter().enumerate() {
        let later = terms[i + 1..].iter().take_while(|b| b.won < a.until);
        for b in later.filter(|b| b.process != a.process) {
            let detail = format!(
                "process {} (epoch {}) and process {} (epoch {}) both believed they led for {:.0} ms",
                a.process,
                a.epoch,
                b.process,
                b.epoch,
                (a.until.min(b.until) - b.won) as f64 / 1e6
            );
            let broken = faults
                .iter()
                .find(|w| w.breaks.is_some() && w.start_ns <= b.won && b.won <= w.end_ns + ttl_ns);
            let (detail, to) = match broken {
                Some(w) => (
                    format!("{detail} (assumption broken: {})", w.name),
                    &mut c.expected,
                ),
                None => (detail, &mut c.anomalies),
            };
            to.push(Anomaly {
                kind: "overlapping leaderships",
                at_s: at(b.won),
                detail,
            });
        }
    }
    epoch_order(&terms, &mut c.anomalies, at);
}

/// A campaign that began after another leadership had been won must win a larger epoch.
fn epoch_order(terms: &[Term], out: &mut Vec<Anomaly>, at: impl Fn(u64) -> f64) {
    for b in terms {
        let earlier = terms
            .iter()
            .filter(|a| a.won < b.invoked && a.epoch >= b.epoch)
            .max_by_key(|a| a.epoch);
        if let Some(a) = earlier {
            out.push(Anomaly {
                kind: "epoch order",
                at_s: at(b.won),
                detail: format!(
                    "process {} won epoch {} after process {} had won epoch {}",
                    b.process, b.epoch, a.process, a.epoch
                ),
            });
        }
    }
}

/// The leaderships counted for the report (`null` for a run without campaigns).
pub fn summary(ops: &[Op]) -> Value {
    let terms = terms(ops);
    if terms.is_empty() {
        return Value::Null;
    }
    let count = |e: End| terms.iter().filter(|t| t.end == e).count();
    let mut held: Vec<f64> = terms
        .iter()
        .map(|t| (t.until - t.won) as f64 / 1e6)
        .collect();
    held.sort_by(f64::total_cmp);
    let campaigns = |k: Kind| {
        ops.iter()
            .filter(|o| o.invoke.f == F::Campaign && o.kind() == k)
            .count()
    };
    json!({
        "won": terms.len(),
        "ended_by_resignation": count(End::Resigned),
        "ended_by_loss_signal": count(End::Lost),
        "ended_with_the_process": count(End::LastEvent),
        "campaigns_failed": campaigns(Kind::Fail),
        "campaigns_unknown": campaigns(Kind::Info),
        "held_ms_p50": held[held.len() / 2],
        "held_ms_max": held.last().copied().unwrap_or(0.0),
    })
}

#[cfg(test)]
#[path = "election_tests.rs"]
mod tests;
