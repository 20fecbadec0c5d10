//! The history: every operation a client process performed, as Jepsen records it: an `invoke`
//! when it starts, then `ok` (it happened), `fail` (it certainly did not) or `info` (unknown:
//! a timeout after the request may have arrived). Times are CLOCK_MONOTONIC nanoseconds,
//! which every process on the machine shares (so events of different processes order), and
//! the wall clock in milliseconds for people. The nemesis's windows are part of it, as
//! Jepsen's nemesis operations are: the checkers read both, and nothing else.

use std::io::Write;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum F {
    /// Take the lock (ok: `token`, `validity_ms`).
    Acquire,
    /// Read the register then write `new` under the lock (ok: `read`, what it replaced).
    Cas,
    Release,
    /// Campaign to lead (ok: `token` is the epoch). The election workload only.
    Campaign,
    /// The library's loss signal fired (a lone event, `ok`, at the moment the worker heard it).
    Lost,
    /// Give leadership up (invoked before the resignation is sent: belief ends there).
    Resign,
    /// A reader's read of the register under its shared hold (ok: `read`); the shared workload.
    Read,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Event {
    pub process: u32,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub f: F,
    pub mono_ns: u64,
    pub wall_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub validity_ms: Option<u64>,
    /// The register's value the CAS read (0: empty).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub read: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub new: Option<u64>,
    /// When the CAS's write was sent (after the hold): where a stale write shows.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub write_ns: Option<u64>,
    /// Whether the write went through the gate (false: the broken-gate runs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub gated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// How the lock was asked for: `reader`, `writer` or `permit` (absent: the mutex).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role: Option<Role>,
    /// A permit's semaphore limit as asked of the nodes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limit: Option<u32>,
}

/// The side of a read/write lock, or a semaphore's permit (workloads/shared.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Reader,
    Writer,
    Permit,
}

impl Event {
    pub fn new(process: u32, kind: Kind, f: F) -> Event {
        Event {
            process,
            kind,
            f,
            mono_ns: mono_ns(),
            wall_ms: wall_ms(),
            token: None,
            validity_ms: None,
            read: None,
            new: None,
            write_ns: None,
            gated: None,
            error: None,
            role: None,
            limit: None,
        }
    }
}

/// Prints one event as a JSON line on stdout, flushed at once, so that a process SIGKILLed or
/// SIGSTOPped has told what it did up to that moment. One write per line: the CLI worker's
/// recorder and its sections share the pipe, and a write below PIPE_BUF never interleaves.
pub fn emit(e: &Event) {
    let mut out = std::io::stdout().lock();
    if let Ok(mut line) = serde_json::to_string(e) {
        line.push('\n');
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine.
pub fn mono_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A fault in force between two instants (the nemesis records one per fault it plays).
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub start_wall_ms: u64,
    /// Set when the fault breaks one of the protocol's assumptions (docs/safety/partitions.md).
    pub breaks: Option<String>,
    /// Why the fault could not be applied; the window then did nothing.
    pub skipped: Option<String>,
}

/// One operation: its invocation and how it completed (`None`: never, as a lost waiter).
#[derive(Clone, Debug)]
pub struct Op {
    pub invoke: Event,
    pub done: Option<Event>,
}

impl Op {
    pub fn kind(&self) -> Kind {
        self.done.as_ref().map_or(Kind::Info, |d| d.kind)
    }

    /// When it completed; an operation that never did is open until the end of time.
    pub fn end_ns(&self) -> u64 {
        self.done
            .as_ref()
            .filter(|d| d.kind != Kind::Info)
            .map_or(u64::MAX, |d| d.mono_ns)
    }
}

/// Pairs each invocation with the next completion of the same process (a process runs one
/// operation at a time), in invocation order.
pub fn pair(events: &[Event]) -> Vec<Op> {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by_key(|e| e.mono_ns);
    let mut open: std::collections::HashMap<u32, usize> = Default::default();
    let mut ops: Vec<Op> = Vec::new();
    for e in sorted {
        // A loss signal arrives while another operation (a CAS) may be open: it is an
        // operation of its own, complete at once, and must not close that one.
        if e.f == F::Lost {
            ops.push(Op {
                invoke: e.clone(),
                done: Some(e.clone()),
            });
        } else if e.kind == Kind::Invoke {
            open.insert(e.process, ops.len());
            ops.push(Op {
                invoke: e.clone(),
                done: None,
            });
        } else if let Some(i) = open.remove(&e.process) {
            ops[i].done = Some(e.clone());
        }
    }
    ops
}
