//! Operations on a lock by owner name, and per-node status: what the CLI's `release`,
//! `extend` and `status` commands need when the guard lives in another process.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::backend::Backend;
use crate::calls::Calls;
use crate::checks::{check_lease, check_name, check_owner};
use crate::errors::Error;
use crate::kind::{LockKind, Resource};
use crate::timing::quorum as majority;

/// One node's view of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    /// The node's URL, its password hidden (`redis://app:***@host:6379`).
    pub node: String,
    /// The holders (empty: free; several: a shared lock's readers or a semaphore's permits),
    /// or why the node could not be asked.
    pub state: Result<Holders, String>,
}

/// Who holds a resource on one node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holders {
    /// A semaphore's limit; `None` for a lock.
    pub limit: Option<u32>,
    /// Every live holder (at most 100), soonest lease end first.
    pub holders: Vec<LockInfo>,
    /// Clients queued for it.
    pub waiters: u64,
}

/// One holder of a resource on one node, as `DLOCK.STATUS` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// The holder's owner name (the CLI's and the clients' are 32 hex digits and `:round`).
    pub owner: String,
    /// The holder's fencing token on this node (a late grant's may differ from the quorum's).
    pub token: u64,
    /// Milliseconds of lease left on this node.
    pub ttl_ms: i64,
    /// Reentrant holds of the owner (1 unless taken with `REENTRANT`).
    pub holds: u64,
    /// `exclusive`, `shared` or `permit`.
    pub mode: String,
}

/// Releases `owner`'s lock on all nodes: how many released it (`LockManager::release_owner`).
pub(crate) async fn release_owner(
    backend: &Arc<Backend>,
    resource: &str,
    owner: &str,
) -> Result<usize, Error> {
    check_name(resource)?;
    check_owner(owner)?;
    let needed = majority(backend.nodes());
    let tally = calls(backend, resource, LockKind::Exclusive)
        .release(owner)
        .await;
    if tally.answered() < needed {
        return Err(tally.no_quorum(resource, needed));
    }
    Ok(tally.done)
}

/// Extends `owner`'s hold on all nodes: the new validity (`LockManager::extend_owner`).
pub(crate) async fn extend_owner(
    backend: &Arc<Backend>,
    resource: Resource<'_>,
    owner: &str,
    ttl: Duration,
) -> Result<Duration, Error> {
    let Resource { name, kind } = resource;
    check_name(name)?;
    check_owner(owner)?;
    check_lease(ttl, &backend.opts.rounds.drift)?;
    let needed = kind.check()?.quorum(backend.nodes());
    calls(backend, name, kind)
        .extend(owner, ttl)
        .await
        .map(|until| until.saturating_duration_since(backend.clock.now()))
        .map_err(|tally| tally.extend_error(name, needed))
}

/// `DLOCK.STATUS` on every node (`LockManager::status`).
pub(crate) async fn status(
    backend: &Arc<Backend>,
    resource: &str,
) -> Result<Vec<NodeStatus>, Error> {
    check_name(resource)?;
    let replies = calls(backend, resource, LockKind::Exclusive).status().await;
    Ok(replies
        .into_iter()
        .enumerate()
        .map(|(i, reply)| NodeStatus {
            node: backend.transport.name(i).to_string(),
            state: reply.map_err(|f| f.reason).and_then(parse_status),
        })
        .collect())
}

fn calls(backend: &Arc<Backend>, resource: &str, kind: LockKind) -> Calls {
    Calls::new(backend.clone(), resource, kind)
}

/// A RESP2 array of name/value pairs or a RESP3 map, as pairs.
pub(crate) fn pairs(reply: Value) -> Result<Vec<(String, Value)>, String> {
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut it = items.into_iter();
            std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
        }
        other => return Err(format!("unexpected DLOCK.STATUS reply {other:?}")),
    };
    pairs
        .into_iter()
        .map(|(name, value)| {
            Ok((
                redis::from_redis_value(name).map_err(|e| e.to_string())?,
                value,
            ))
        })
        .collect()
}

/// `DLOCK.STATUS`: nil (free); a lock's `owner token ttl holds waiters`; or a shared lock's or
/// semaphore's `kind [limit] count holders waiters`, each holder `owner token ttl holds mode`.
fn parse_status(reply: Value) -> Result<Holders, String> {
    if reply == Value::Nil {
        return Ok(Holders::default());
    }
    let mut status = Holders::default();
    let mut single = None;
    for (name, value) in pairs(reply)? {
        let bad = |e: redis::ParsingError| format!("field {name}: {e}");
        match name.as_str() {
            "limit" => status.limit = Some(redis::from_redis_value(value).map_err(bad)?),
            "waiters" => status.waiters = redis::from_redis_value(value).map_err(bad)?,
            "holders" => {
                let list: Vec<Value> = redis::from_redis_value(value).map_err(bad)?;
                for holder in list {
                    status.holders.push(holder_of(pairs(holder)?, "shared")?);
                }
            }
            "kind" | "count" => {}
            _ => single.get_or_insert_with(Vec::new).push((name, value)),
        }
    }
    if let Some(fields) = single {
        status.holders.push(holder_of(fields, "exclusive")?);
    }
    Ok(status)
}

/// One holder from its fields; `mode` when the reply names none (a plain lock's).
fn holder_of(fields: Vec<(String, Value)>, mode: &str) -> Result<LockInfo, String> {
    let mut info = LockInfo {
        owner: String::new(),
        token: 0,
        ttl_ms: 0,
        holds: 0,
        mode: mode.to_string(),
    };
    for (name, value) in fields {
        let bad = |e: redis::ParsingError| format!("field {name}: {e}");
        match name.as_str() {
            "owner" => info.owner = redis::from_redis_value(value).map_err(bad)?,
            "token" => info.token = redis::from_redis_value(value).map_err(bad)?,
            "ttl" => info.ttl_ms = redis::from_redis_value(value).map_err(bad)?,
            "holds" => info.holds = redis::from_redis_value(value).map_err(bad)?,
            "mode" => info.mode = redis::from_redis_value(value).map_err(bad)?,
            _ => {}
        }
    }
    Ok(info)
}
