//! Operations on a lock by owner name, and per-node status: what the CLI's `release`,
//! `extend` and `status` commands need when the guard lives in another process.

use std::time::Duration;

use redis::Value;

use crate::error::Error;
use crate::manager::LockManager;
use crate::shared::check_ttl;
use crate::timing::quorum as majority;

/// One node's view of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub node: String,
    /// `Ok(None)`: free; `Ok(Some)`: held; `Err`: unreachable, with the reason.
    pub state: Result<Option<LockInfo>, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    pub owner: String,
    pub token: u64,
    pub ttl_ms: i64,
    pub holds: u64,
}

impl LockManager {
    /// Releases `owner`'s lock on all nodes. Ok(number of nodes that released it);
    /// [`Error::NoQuorum`] naming the unreachable nodes if fewer than a majority answered.
    pub async fn release_owner(&self, resource: &str, owner: &str) -> Result<usize, Error> {
        let shared = &self.shared;
        let tally = shared.round(resource, owner).release().await;
        if tally.answered() < majority(shared.nodes()) {
            return Err(tally.no_quorum(resource, shared.nodes()));
        }
        Ok(tally.done)
    }

    /// Extends `owner`'s lock on all nodes; the new validity. [`Error::NoQuorum`] if too few
    /// nodes answered, [`Error::LockLost`] if a majority answered but did not extend.
    pub async fn extend_owner(
        &self,
        resource: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Duration, Error> {
        check_ttl(ttl)?;
        let shared = &self.shared;
        shared
            .round(resource, owner)
            .extend(ttl)
            .await
            .map(|until| until.saturating_duration_since(shared.clock.now()))
            .map_err(|tally| tally.extend_error(resource, shared.nodes()))
    }

    /// `DLOCK.STATUS` on every node.
    pub async fn status(&self, resource: &str) -> Vec<NodeStatus> {
        let shared = &self.shared;
        let replies = shared.round(resource, "").status().await;
        replies
            .into_iter()
            .enumerate()
            .map(|(i, reply)| NodeStatus {
                node: shared.transport.name(i).to_string(),
                state: reply.map_err(|f| f.reason).and_then(parse_status),
            })
            .collect()
    }
}

/// `owner <bytes> token <int> ttl <int> holds <int>` as a RESP2 array or RESP3 map.
fn parse_status(reply: Value) -> Result<Option<LockInfo>, String> {
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Nil => return Ok(None),
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut it = items.into_iter();
            std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
        }
        other => return Err(format!("unexpected DLOCK.STATUS reply {other:?}")),
    };
    let mut info = LockInfo {
        owner: String::new(),
        token: 0,
        ttl_ms: 0,
        holds: 0,
    };
    for (name, value) in pairs {
        let name: String = redis::from_redis_value(name).map_err(|e| e.to_string())?;
        let bad = |e: redis::ParsingError| format!("field {name}: {e}");
        match name.as_str() {
            "owner" => info.owner = redis::from_redis_value(value).map_err(bad)?,
            "token" => info.token = redis::from_redis_value(value).map_err(bad)?,
            "ttl" => info.ttl_ms = redis::from_redis_value(value).map_err(bad)?,
            "holds" => info.holds = redis::from_redis_value(value).map_err(bad)?,
            _ => {}
        }
    }
    Ok(Some(info))
}
