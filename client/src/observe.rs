//! What an operator watches: each node's hot locks (`DLOCK.TOP`, its cursor walked to the end
//! in bounded steps) for `dlock top`, and where one waiter stands in a lock's queue
//! (`DLOCK.WAITERS` and `DLOCK.STATUS`) for the CLI's waiting line. Read-only.

use std::time::Duration;

use futures::future::join_all;
use redis::Value;

use crate::backend::Backend;
use crate::commands::Request;

/// Keys one `DLOCK.TOP` step asks the node to scan: about a millisecond of the node's time
/// (docs/bench/top.md), few round trips over a large keyspace.
const STEP: u64 = 1000;
/// Steps per node and call: a keyspace larger than about a million keys is shown in part
/// ([`Top::complete`] false) rather than walked for seconds.
const MAX_STEPS: usize = 1000;

/// One node's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView<T> {
    /// The node's URL, its password hidden.
    pub node: String,
    /// `Err`: unreachable or refused, with the reason.
    pub state: Result<T, String>,
}

/// A holder of a lock as a node reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The holder's owner name.
    pub owner: String,
    /// Its fencing token on that node.
    pub token: u64,
    /// Lease left on that node.
    pub ttl: Duration,
}

/// A lock with clients waiting for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedLock {
    /// The resource's name.
    pub resource: String,
    /// Clients waiting for it on that node.
    pub waiters: u64,
    /// How long the longest-waiting client has waited.
    pub oldest_wait: Duration,
    /// `None` while free (a handoff is due).
    pub holder: Option<Holder>,
}

/// One holder of a held lock (a shared lock or a semaphore has a row per holder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    /// The resource's name.
    pub resource: String,
    /// Who holds it.
    pub holder: Holder,
    /// The holder's reentrant holds.
    pub holds: u64,
    /// Clients waiting for the resource on that node.
    pub waiters: u64,
    /// `exclusive`, `shared` or `permit`.
    pub mode: String,
}

/// One node's hot locks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Top {
    /// Longest queue first, then oldest waiter.
    pub waiting: Vec<QueuedLock>,
    /// Most waiters first, then by name; at most the rows asked for (a row per holder).
    pub held: Vec<HeldLock>,
    /// Held locks found, before the cut to the rows asked for.
    pub held_total: usize,
    /// False when the walk stopped at its step limit before the end of the keyspace.
    pub complete: bool,
}

/// Where one owner stands in a lock's queue on one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueState {
    /// 1 for the head of the queue; `None` when `owner` is not queued there.
    pub position: Option<usize>,
    /// Clients queued on that node.
    pub waiters: usize,
    /// Every holder (one for an exclusive lock); empty when free.
    pub holders: Vec<Holder>,
}

/// Every node's hot locks (`LockManager::top`).
pub(crate) async fn top(backend: &Backend, rows: usize) -> Vec<NodeView<Top>> {
    let transport = &backend.transport;
    join_all((0..transport.nodes()).map(|node| async move {
        let name = transport.name(node).to_string();
        let state = if name.contains("+cluster://") {
            Err("a cluster: give each master as a redis:// URL to see its locks".into())
        } else {
            walk(backend, node, rows).await
        };
        NodeView { node: name, state }
    }))
    .await
}

async fn walk(backend: &Backend, node: usize, rows: usize) -> Result<Top, String> {
    let (mut top, mut cursor) = (Top::default(), 0);
    for _ in 0..MAX_STEPS {
        let request = Request::Top {
            cursor,
            count: STEP,
        };
        let timeout = backend.opts.rounds.timeout;
        let reply = backend.transport.call(node, request, timeout);
        let step = parse_top(reply.await.map_err(|f| f.reason)?)?;
        if cursor == 0 {
            top.waiting = step.waiting;
            top.waiting.truncate(rows);
        }
        top.held.extend(step.held);
        cursor = step.cursor;
        if cursor == 0 {
            top.complete = true;
            break;
        }
    }
    top.held
        .sort_by(|a, b| (b.waiters, &a.resource).cmp(&(a.waiters, &b.resource)));
    top.held_total = top.held.len();
    top.held.truncate(rows);
    Ok(top)
}

/// Where `owner` stands in `resource`'s queue on every node (`LockManager::queue_state`).
pub(crate) async fn queue_states(
    backend: &Backend,
    resource: &str,
    owner: &str,
) -> Vec<NodeView<QueueState>> {
    let transport = &backend.transport;
    let timeout = backend.opts.rounds.timeout;
    join_all((0..transport.nodes()).map(|node| async move {
        let waiters = transport.call(node, Request::Waiters { resource }, timeout);
        let status = transport.call(node, Request::Status { resource }, timeout);
        let (waiters, status) = futures::join!(waiters, status);
        let state = waiters
            .and_then(|w| Ok((w, status?)))
            .map_err(|f| f.reason)
            .and_then(|(w, s)| queue_state(w, s, owner));
        NodeView {
            node: transport.name(node).to_string(),
            state,
        }
    }))
    .await
}

struct Step {
    cursor: u64,
    waiting: Vec<QueuedLock>,
    held: Vec<HeldLock>,
}

/// `cursor`, `waiting` and `held` as a RESP3 map or a RESP2 flat array.
fn parse_top(reply: Value) -> Result<Step, String> {
    let mut step = Step {
        cursor: 0,
        waiting: Vec::new(),
        held: Vec::new(),
    };
    for (name, value) in pairs(reply)? {
        match text(name)?.as_str() {
            "cursor" => {
                step.cursor = text(value)?.parse().map_err(|e| format!("cursor: {e}"))?;
            }
            "waiting" => step.waiting = rows(value, queued_lock)?,
            "held" => step.held = rows(value, held_lock)?,
            _ => {}
        }
    }
    Ok(step)
}

fn rows<T>(value: Value, row: fn(Vec<Value>) -> Result<T, String>) -> Result<Vec<T>, String> {
    let Value::Array(items) = value else {
        return Err(format!("expected rows, got {value:?}"));
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Array(fields) => row(fields),
            other => Err(format!("expected a row, got {other:?}")),
        })
        .collect()
}

/// `[key, waiters, oldest-wait-ms, owner|nil, token|nil, ttl|nil]`
fn queued_lock(fields: Vec<Value>) -> Result<QueuedLock, String> {
    let [key, waiters, oldest, owner, token, ttl] = fixed(fields)?;
    let holder = match owner {
        Value::Nil => None,
        owner => Some(holder(owner, token, ttl)?),
    };
    Ok(QueuedLock {
        resource: text(key)?,
        waiters: int(waiters)?,
        oldest_wait: Duration::from_millis(int(oldest)?),
        holder,
    })
}

/// `[key, owner, token, ttl, holds, waiters, mode]` (a module without shared locks sends no
/// mode: exclusive)
fn held_lock(mut fields: Vec<Value>) -> Result<HeldLock, String> {
    let mode = match fields.len() {
        7.. => text(fields.remove(6))?,
        _ => "exclusive".to_string(),
    };
    let [key, owner, token, ttl, holds, waiters] = fixed(fields)?;
    Ok(HeldLock {
        resource: text(key)?,
        holder: holder(owner, token, ttl)?,
        holds: int(holds)?,
        waiters: int(waiters)?,
        mode,
    })
}

fn holder(owner: Value, token: Value, ttl: Value) -> Result<Holder, String> {
    Ok(Holder {
        owner: text(owner)?,
        token: int(token)?,
        ttl: Duration::from_millis(int(ttl)?),
    })
}

/// The first six fields of a row (a newer module may add more after them).
fn fixed(fields: Vec<Value>) -> Result<[Value; 6], String> {
    let found = fields.len();
    let mut it = fields.into_iter();
    let mut next = || {
        it.next()
            .ok_or(format!("a row of {found} fields, expected 6"))
    };
    Ok([next()?, next()?, next()?, next()?, next()?, next()?])
}

/// `DLOCK.WAITERS` (`[owner, ticket, ms]` each, in service order) and `DLOCK.STATUS`: nil, the
/// exclusive lock's `owner token ttl holds waiters`, or a shared lock's `holders` (maps of
/// owner, token, ttl, ...).
fn queue_state(waiters: Value, status: Value, owner: &str) -> Result<QueueState, String> {
    let queue = match waiters {
        Value::Array(items) => items,
        other => return Err(format!("unexpected DLOCK.WAITERS reply {other:?}")),
    };
    let mut state = QueueState {
        waiters: queue.len(),
        ..QueueState::default()
    };
    for (i, waiter) in queue.into_iter().enumerate() {
        let first = match waiter {
            Value::Array(fields) => fields.into_iter().next(),
            _ => None,
        };
        if first.map(text).transpose()?.as_deref() == Some(owner) {
            state.position = Some(i + 1);
        }
    }
    if status != Value::Nil {
        state.holders = holders(status)?;
    }
    Ok(state)
}

fn holders(status: Value) -> Result<Vec<Holder>, String> {
    let (mut owner, mut token, mut ttl) = (None, None, None);
    for (name, value) in pairs(status)? {
        match text(name)?.as_str() {
            "owner" => owner = Some(value),
            "token" => token = Some(value),
            "ttl" => ttl = Some(value),
            "holders" => return rows_of_maps(value),
            _ => {}
        }
    }
    match (owner, token, ttl) {
        (Some(owner), Some(token), Some(ttl)) => Ok(vec![holder(owner, token, ttl)?]),
        _ => Err("DLOCK.STATUS names no holder".into()),
    }
}

fn rows_of_maps(value: Value) -> Result<Vec<Holder>, String> {
    let Value::Array(items) = value else {
        return Err(format!("expected holders, got {value:?}"));
    };
    items.into_iter().map(holders_one).collect()
}

fn holders_one(map: Value) -> Result<Holder, String> {
    holders(map)?
        .pop()
        .ok_or_else(|| "an empty holder".to_string())
}

/// A RESP3 map's pairs, or a RESP2 flat array's.
fn pairs(reply: Value) -> Result<Vec<(Value, Value)>, String> {
    match reply {
        Value::Map(pairs) => Ok(pairs),
        Value::Array(items) => {
            let mut it = items.into_iter();
            Ok(std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect())
        }
        other => Err(format!("expected a map, got {other:?}")),
    }
}

fn text(value: Value) -> Result<String, String> {
    redis::from_redis_value(value).map_err(|e| e.to_string())
}

fn int(value: Value) -> Result<u64, String> {
    redis::from_redis_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;
