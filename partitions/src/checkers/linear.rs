//! Linearizability of the guarded register, with stateright's `LinearizabilityTester` (the
//! model check's own dependency, so no new crate; it is a direct search over the history's
//! interleavings, in the spirit of Knossos's WGL).
//!
//! Each critical section is one operation on a compare-and-set register: it read `expect`
//! and wrote `new`. When the lock and the gate do their job these operations are atomic, so
//! the history is that of a linearizable CAS register; two holders who both read the same
//! value and both wrote (a lost update) cannot be ordered, and the tester finds no order.
//! Failed operations are left out (they certainly did nothing); an `info` one stays in
//! flight forever (it may or may not have happened), and its process continues as a new
//! thread, as Jepsen does.

use std::sync::mpsc;
use std::time::Duration;

use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use crate::history::{Kind, Op, F};

#[derive(Clone, Debug, Default, Hash, PartialEq)]
pub struct CasRegister(u64);

#[derive(Clone, Debug, PartialEq)]
pub struct Cas {
    pub expect: u64,
    pub new: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CasRet {
    Ok,
    Refused,
}

impl SequentialSpec for CasRegister {
    type Op = Cas;
    type Ret = CasRet;
    fn invoke(&mut self, op: &Cas) -> CasRet {
        if self.0 == op.expect {
            self.0 = op.new;
            CasRet::Ok
        } else {
            CasRet::Refused
        }
    }
}

/// The verdict on the register.
#[derive(Debug)]
pub enum Linear {
    Valid {
        ops: usize,
    },
    /// The segment without an order, in invocation order (`process: expect -> new`).
    Invalid {
        ops: Vec<String>,
    },
    /// The search did not finish within its budget.
    Unknown {
        ops: usize,
    },
}

/// The CAS operations that may have happened (ok, or info with a read), in invocation order.
fn cas_ops(ops: &[Op]) -> Vec<&Op> {
    ops.iter()
        // A reader's read (shared workload) is a CAS of the value it read to itself.
        .filter(|o| matches!(o.invoke.f, F::Cas | F::Read))
        .filter(|o| matches!(o.kind(), Kind::Ok | Kind::Info))
        .filter(|o| o.done.as_ref().is_some_and(|d| d.read.is_some()))
        .collect()
}

/// Cuts the history where nothing is in flight, so each piece is searched alone (the search is
/// exponential in concurrency, and the mutex keeps pieces small); the register's value
/// carries over from the piece before through the order the tester found.
fn segments<'a>(ops: &[&'a Op]) -> Vec<Vec<&'a Op>> {
    let mut out: Vec<Vec<&Op>> = Vec::new();
    let mut open_until = 0u64;
    for op in ops {
        if out.is_empty() || op.invoke.mono_ns > open_until {
            out.push(Vec::new());
        }
        open_until = open_until.max(op.end_ns());
        if let Some(last) = out.last_mut() {
            last.push(op);
        }
    }
    out
}

fn describe(op: &Op) -> String {
    let d = op.done.as_ref();
    if op.invoke.f == F::Read {
        let read = d.and_then(|d| d.read).unwrap_or(0);
        return format!(
            "process {} token {}: a reader read {read} ({:?})",
            op.invoke.process,
            op.invoke.token.unwrap_or(0),
            op.kind()
        );
    }
    format!(
        "process {} token {}: read {} then wrote {} ({:?})",
        op.invoke.process,
        op.invoke.token.unwrap_or(0),
        d.and_then(|d| d.read).unwrap_or(0),
        op.invoke.new.unwrap_or(0),
        op.kind()
    )
}

/// Checks every segment; stops at the first without an order.
pub fn check(ops: &[Op], budget: Duration) -> Linear {
    let cas = cas_ops(ops);
    let mut state = 0u64;
    for seg in segments(&cas) {
        match order(state, &seg, budget) {
            Some(Some(end)) => state = end,
            Some(None) => {
                return Linear::Invalid {
                    ops: culprits(&seg).iter().map(|o| describe(o)).collect(),
                }
            }
            None => return Linear::Unknown { ops: cas.len() },
        }
    }
    Linear::Valid { ops: cas.len() }
}

/// What to show of a segment without an order: the writes that read the same value (lost
/// updates: each overwrote a value another had already replaced), else the whole segment.
fn culprits<'a>(seg: &[&'a Op]) -> Vec<&'a Op> {
    let read = |o: &Op| o.done.as_ref().and_then(|d| d.read);
    let shared: Vec<&Op> = seg
        .iter()
        .filter(|o| seg.iter().filter(|p| read(p) == read(o)).count() > 1)
        .copied()
        .collect();
    if shared.is_empty() {
        seg.to_vec()
    } else {
        shared
    }
}

/// The register's value after a linearization of `seg` from `start`: `Some(None)` if there is
/// none, `None` if the search ran out of time.
fn order(start: u64, seg: &[&Op], budget: Duration) -> Option<Option<u64>> {
    let mut events: Vec<(u64, usize, Option<CasRet>, Cas)> = Vec::new();
    let mut generation = std::collections::HashMap::<u32, usize>::new();
    for op in seg {
        let thread = thread_of(&mut generation, op);
        let read = op.done.as_ref().and_then(|d| d.read).unwrap_or(0);
        let cas = Cas {
            expect: read,
            new: op.invoke.new.unwrap_or(read),
        };
        events.push((op.invoke.mono_ns, thread, None, cas.clone()));
        if op.kind() == Kind::Ok {
            events.push((op.end_ns(), thread, Some(CasRet::Ok), cas));
        }
    }
    events.sort_by_key(|e| e.0);
    let (tx, rx) = mpsc::channel();
    // The search recurses once per operation: a thread with a stack to match.
    let spawned = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || {
            let mut tester = LinearizabilityTester::new(CasRegister(start));
            for (_, thread, ret, op) in events {
                let fed = match ret {
                    None => tester.on_invoke(thread, op).map(drop),
                    Some(r) => tester.on_return(thread, r).map(drop),
                };
                if fed.is_err() {
                    let _ = tx.send(None);
                    return;
                }
            }
            let end = tester.serialized_history().map(|h| final_value(start, &h));
            let _ = tx.send(end);
        });
    spawned.ok()?;
    rx.recv_timeout(budget).ok()
}

/// A process continues as a new thread after an `info` (its old operation stays in flight).
fn thread_of(generation: &mut std::collections::HashMap<u32, usize>, op: &Op) -> usize {
    let g = generation.entry(op.invoke.process).or_default();
    let thread = op.invoke.process as usize * 10_000 + *g;
    if op.kind() == Kind::Info {
        *g += 1;
    }
    thread
}

fn final_value(start: u64, history: &[(Cas, CasRet)]) -> u64 {
    history
        .iter()
        .rev()
        .find(|(_, r)| *r == CasRet::Ok)
        .map(|(c, _)| c.new)
        .unwrap_or(start)
}

#[cfg(test)]
#[path = "linear_tests.rs"]
mod tests;
