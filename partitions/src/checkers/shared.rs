//! The read/write lock's and the semaphore's invariants, read from the history as lock.rs
//! reads the mutex's: no writer's believed validity overlaps another holder's (reader or
//! writer), never more than `limit` permits believed held at one instant, a writer's token above
//! every earlier reader's and writer's and a reader's above every earlier writer's (holds that
//! may overlap, two readers or two permits, have tokens with no meaningful order), no stale
//! write accepted, no lost waiter. As for the mutex, what happens while a fault that breaks an
//! assumption is in force (or within a TTL after it) is shown as expected, not counted.

use crate::checkers::common::{lost_waiters, stale_writes, Anomaly, Checked};
use crate::history::{Kind, Op, Role, Window, F};

/// A hold as its holder believed it: from the grant's reply to the release's invocation (the
/// holder acts no more once it releases), or to the end of the validity it computed.
#[derive(Debug)]
struct Hold {
    process: u32,
    role: Role,
    token: u64,
    invoked: u64,
    from: u64,
    until: u64,
}

fn holds(ops: &[Op]) -> Vec<Hold> {
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let Some(done) = op.done.as_ref().filter(|d| d.kind == Kind::Ok) else {
            continue;
        };
        let Some(role) = op.invoke.role.filter(|_| op.invoke.f == F::Acquire) else {
            continue;
        };
        let believed = done.mono_ns + done.validity_ms.unwrap_or(0) * 1_000_000;
        let released = ops[i + 1..]
            .iter()
            .find(|o| o.invoke.process == op.invoke.process && o.invoke.f == F::Release)
            .map_or(u64::MAX, |o| o.invoke.mono_ns);
        out.push(Hold {
            process: op.invoke.process,
            role,
            token: done.token.unwrap_or(0),
            invoked: op.invoke.mono_ns,
            from: done.mono_ns,
            until: believed.min(released),
        });
    }
    out.sort_by_key(|h| h.from);
    out
}

/// What to check an anomaly at `ns` against: the run's faults and its TTL.
struct Context<'a> {
    faults: &'a [Window],
    t0: u64,
    ttl_ns: u64,
}

impl Context<'_> {
    fn at(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.t0) as f64 / 1e9
    }

    /// Files the anomaly as expected when a fault breaking an assumption was in force then.
    fn file(&self, c: &mut Checked, kind: &'static str, ns: u64, detail: String) {
        let broken = self.faults.iter().find(|w| {
            w.breaks.is_some() && w.start_ns <= ns && ns <= w.end_ns.saturating_add(self.ttl_ns)
        });
        let anomaly = |detail| Anomaly {
            kind,
            at_s: self.at(ns),
            detail,
        };
        match broken {
            Some(w) => c
                .expected
                .push(anomaly(format!("{detail} (assumption broken: {})", w.name))),
            None => c.anomalies.push(anomaly(detail)),
        }
    }
}

fn name(h: &Hold) -> String {
    let role = format!("{:?}", h.role).to_lowercase();
    format!("{role} process {} (token {})", h.process, h.token)
}

/// Checks the shared and semaphore holds of `ops`; `limit` is the semaphore's.
pub fn check(ops: &[Op], faults: &[Window], t0: u64, ttl_ns: u64, limit: u32) -> Checked {
    let cx = Context { faults, t0, ttl_ns };
    let holds = holds(ops);
    let mut c = Checked {
        anomalies: Vec::new(),
        expected: Vec::new(),
    };
    exclusion(&holds, &cx, &mut c);
    permits(&holds, limit, &cx, &mut c);
    token_order(&holds, &cx, &mut c.anomalies);
    stale_writes(ops, &mut c.anomalies, |ns| cx.at(ns));
    lost_waiters(ops, &mut c.anomalies, |ns| cx.at(ns));
    c
}

/// A writer beside anyone: two holds of the read/write lock that overlap, one a writer's.
fn exclusion(holds: &[Hold], cx: &Context, c: &mut Checked) {
    let rw: Vec<&Hold> = holds.iter().filter(|h| h.role != Role::Permit).collect();
    for (i, a) in rw.iter().enumerate() {
        for b in rw[i + 1..].iter().take_while(|b| b.from < a.until) {
            if a.role != Role::Writer && b.role != Role::Writer {
                continue;
            }
            let ms = (a.until.min(b.until).saturating_sub(b.from)) as f64 / 1e6;
            let detail = format!(
                "{} and {} both believed they held the lock for {ms:.0} ms",
                name(a),
                name(b)
            );
            cx.file(c, "writer beside a holder", b.from, detail);
        }
    }
}

/// More than `limit` permits believed held at one instant; one anomaly per excess (from the
/// grant that went above the limit until the count is back within it).
fn permits(holds: &[Hold], limit: u32, cx: &Context, c: &mut Checked) {
    let permits: Vec<&Hold> = holds.iter().filter(|h| h.role == Role::Permit).collect();
    // Ends before starts at one instant: a permit released as another is granted is no excess.
    let mut edges: Vec<(u64, bool, usize)> = Vec::new();
    for (i, h) in permits.iter().enumerate() {
        edges.push((h.from, true, i));
        edges.push((h.until, false, i));
    }
    edges.sort_by_key(|&(ns, start, _)| (ns, start));
    let mut held: Vec<usize> = Vec::new();
    let mut over = false;
    for (ns, start, i) in edges {
        if !start {
            held.retain(|&j| j != i);
            over = over && held.len() > limit as usize;
            continue;
        }
        held.push(i);
        if held.len() > limit as usize && !over {
            over = true;
            let names: Vec<String> = held.iter().map(|&j| name(permits[j])).collect();
            let detail = format!(
                "{} permits believed held at once (limit {limit}): {}",
                held.len(),
                names.join(", ")
            );
            cx.file(c, "permits above the limit", ns, detail);
        }
    }
}

/// Holds that exclude each other: tokens must rise in grant order. A writer's token is above
/// every reader's and writer's granted before it asked; a reader's above every writer's.
fn token_order(holds: &[Hold], cx: &Context, out: &mut Vec<Anomaly>) {
    let excludes = |a: &Hold, b: &Hold| {
        a.role != Role::Permit
            && b.role != Role::Permit
            && (a.role == Role::Writer || b.role == Role::Writer)
    };
    for b in holds {
        let earlier = holds
            .iter()
            .filter(|a| excludes(a, b) && a.from < b.invoked && a.token >= b.token)
            .max_by_key(|a| a.token);
        if let Some(a) = earlier {
            out.push(Anomaly {
                kind: "token order",
                at_s: cx.at(b.from),
                detail: format!("{} was granted after {}", name(b), name(a)),
            });
        }
    }
}

#[cfg(test)]
#[path = "shared_tests.rs"]
mod tests;
