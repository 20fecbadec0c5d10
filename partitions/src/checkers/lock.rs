//! The mutex's invariants, read from the same history as the register's check (linear.rs):
//! grants that overlap in their holders' believed validity, tokens that do not rise in grant
//! order, and those every lock shares (common.rs): stale writes accepted, lost waiters. An
//! overlap while a fault that breaks one of the protocol's assumptions was in force (or within a
//! TTL after it) is reported as expected, not as an anomaly: docs/safety/partitions.md says which faults
//! those are.

use crate::checkers::common::{lost_waiters, stale_writes, Anomaly, Checked};
use crate::history::{Kind, Op, Window, F};

/// A grant as its holder believed it: from the reply to the release (or the validity's end).
struct Grant {
    process: u32,
    token: u64,
    invoked: u64,
    from: u64,
    until: u64,
}

fn grants(ops: &[Op]) -> Vec<Grant> {
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let Some(done) = op.done.as_ref().filter(|d| d.kind == Kind::Ok) else {
            continue;
        };
        if op.invoke.f != F::Acquire {
            continue;
        }
        let believed = done.mono_ns + done.validity_ms.unwrap_or(0) * 1_000_000;
        let released = ops[i + 1..]
            .iter()
            .find(|o| o.invoke.process == op.invoke.process && o.invoke.f == F::Release)
            .map_or(u64::MAX, |o| o.invoke.mono_ns);
        out.push(Grant {
            process: op.invoke.process,
            token: done.token.unwrap_or(0),
            invoked: op.invoke.mono_ns,
            from: done.mono_ns,
            until: believed.min(released),
        });
    }
    out.sort_by_key(|g| g.from);
    out
}

pub fn check(ops: &[Op], faults: &[Window], t0: u64, ttl_ns: u64) -> Checked {
    let at = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let grants = grants(ops);
    let mut c = Checked {
        anomalies: Vec::new(),
        expected: Vec::new(),
    };
    for (i, a) in grants.iter().enumerate() {
        for b in grants[i + 1..].iter().take_while(|b| b.from < a.until) {
            let detail = format!(
                "process {} (token {}) and process {} (token {}) both believed they held the lock for {:.0} ms",
                a.process, a.token, b.process, b.token,
                (a.until.min(b.until) - b.from) as f64 / 1e6
            );
            let broken = faults.iter().find(|w| {
                w.breaks.is_some() && w.start_ns <= b.from && b.from <= w.end_ns + ttl_ns
            });
            let anomaly = Anomaly {
                kind: "overlapping grants",
                at_s: at(b.from),
                detail: match broken {
                    Some(w) => format!("{detail} (assumption broken: {})", w.name),
                    None => detail,
                },
            };
            match broken {
                Some(_) => c.expected.push(anomaly),
                None => c.anomalies.push(anomaly),
            }
        }
    }
    token_order(&grants, &mut c.anomalies, at);
    stale_writes(ops, &mut c.anomalies, at);
    lost_waiters(ops, &mut c.anomalies, at);
    c
}

/// A grant whose call began after another grant had been given must carry a larger token.
fn token_order(grants: &[Grant], out: &mut Vec<Anomaly>, at: impl Fn(u64) -> f64) {
    for b in grants {
        if let Some(a) = grants
            .iter()
            .filter(|a| a.from < b.invoked && a.token >= b.token)
            .max_by_key(|a| a.token)
        {
            out.push(Anomaly {
                kind: "token order",
                at_s: at(b.from),
                detail: format!(
                    "process {} was granted token {} after process {} had been granted {}",
                    b.process, b.token, a.process, a.token
                ),
            });
        }
    }
}
