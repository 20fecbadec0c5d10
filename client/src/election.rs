//! Leader election (docs/election.md): a campaign is a queued exclusive lock on the election's
//! name whose owner carries the candidate's value (`<id> <value>`), so that the fair queue, the
//! handoff, replication and persistence carry the value with the grant; the leader's epoch is
//! its fencing token, rising with every leader. Leadership is kept by the watchdog under the
//! lease-loss contract (renewal.rs). Who leads is read (`leader`) or followed (`observe`,
//! election_watch.rs) by the same rule: one holder with one token on a quorum of the nodes.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::backend::Backend;
use crate::calls::Calls;
use crate::errors::Error;
use crate::kind::LockKind;
use crate::lock::{LockContext, LockGuard, Watchdog};
use crate::timing::quorum;

/// The longest value a candidate may carry: the owner (at most 256 bytes on the nodes) also
/// holds the candidate's id, its round and a space.
pub const MAX_VALUE_LEN: usize = 200;

/// How long one queued round of a campaign waits before it queues again (it waits on the
/// nodes, so this only bounds how stale a forgotten campaign's place can get).
pub(crate) const CAMPAIGN_ROUND: Duration = Duration::from_secs(60);

/// Who leads an election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The leader's candidate id (unique per campaign).
    pub id: String,
    /// The value it campaigned with or last proclaimed.
    pub value: String,
    /// Its epoch: the fencing token of its leadership, larger than every earlier leader's.
    pub epoch: u64,
}

/// An owner as (candidate id, value): the value follows the first space.
pub fn split_owner(owner: &str) -> (&str, &str) {
    owner.split_once(' ').unwrap_or((owner, ""))
}

/// Refuses a name or value the nodes would refuse, before any node is asked.
pub(crate) fn check(name: &str, value: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::InvalidArgument("an election needs a name".into()));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::InvalidArgument(format!(
            "a leader's value is at most {MAX_VALUE_LEN} bytes, got {}",
            value.len()
        )));
    }
    Ok(())
}

/// One node's holder of the election's lock: `Some((owner, token))`, or `None` when free.
pub type Seen = Option<(String, u64)>;

/// Who leads, from what each node holds (`None`: the node did not answer): the candidate id
/// holding on `needed` nodes, `Some(None)` when none does, `None` when fewer than `needed`
/// answered (unknown). Its epoch is the token it holds on `needed` nodes (the committed one),
/// else the `previous` leader's if it is the same candidate still holding it somewhere, else its
/// smallest: a node granted late keeps its own token (FENCE never lowers one), so with committed
/// nodes down or released the epoch is on fewer than `needed` of those that answer. Its
/// value is the one it holds on `needed` nodes, else the `previous` leader's while a
/// proclamation spreads, else the first node's.
pub fn leader_view(
    nodes: &[Option<Seen>],
    needed: usize,
    previous: Option<&Leader>,
) -> Option<Option<Leader>> {
    let answered: Vec<&Seen> = nodes.iter().flatten().collect();
    if answered.len() < needed {
        return None;
    }
    let holders: Vec<(&str, &str, u64)> = answered
        .iter()
        .filter_map(|seen| seen.as_ref())
        .map(|(owner, token)| {
            let (id, value) = split_owner(owner);
            (id, value, *token)
        })
        .collect();
    let count = |f: &dyn Fn(&(&str, &str, u64)) -> bool| holders.iter().filter(|h| f(h)).count();
    let Some(&(id, first_value, _)) = holders.iter().find(|h| count(&|o| o.0 == h.0) >= needed)
    else {
        return Some(None);
    };
    let mine: Vec<&(&str, &str, u64)> = holders.iter().filter(|h| h.0 == id).collect();
    let committed = mine
        .iter()
        .find(|h| count(&|o| o.0 == id && o.2 == h.2) >= needed);
    let kept = previous.filter(|p| p.id == id && mine.iter().any(|h| h.2 == p.epoch));
    let epoch = match (committed, kept) {
        (Some(h), _) => h.2,
        (None, Some(p)) => p.epoch, // a leadership's epoch never changes while it lasts
        (None, None) => mine.iter().map(|h| h.2).min().unwrap_or(0),
    };
    let agreed = mine
        .iter()
        .find(|h| count(&|o| o.0 == id && o.1 == h.1) >= needed);
    let value = match (agreed, previous) {
        (Some(h), _) => h.1.to_string(),
        (None, Some(p)) if p.id == id && p.epoch == epoch => p.value.clone(),
        (None, _) => first_value.to_string(),
    };
    Some(Some(Leader {
        id: id.to_string(),
        value,
        epoch,
    }))
}

/// A node's holder from a `DLOCK.STATUS` or `DLOCK.OBSERVE` reply: nil when free, else the
/// fields `owner` and `token` (a RESP2 array of pairs or a RESP3 map); a shared lock or a
/// semaphore (a `kind` field) is not an election.
pub(crate) fn holder(name: &str, node: &str, reply: Value) -> Result<Seen, Error> {
    if reply == Value::Nil {
        return Ok(None);
    }
    let malformed = |why: String| Error::InvalidArgument(format!("{name} on {node}: {why}"));
    let (mut owner, mut token) = (None, None);
    for (field, value) in crate::admin::pairs(reply).map_err(malformed)? {
        match field.as_str() {
            "owner" => owner = redis::from_redis_value::<String>(value).ok(),
            "token" => token = redis::from_redis_value::<u64>(value).ok(),
            "kind" => {
                return Err(Error::WrongKind {
                    resource: name.to_string(),
                    node: node.to_string(),
                    message: "held as a shared lock or semaphore, not an election".into(),
                })
            }
            _ => {}
        }
    }
    match (owner, token) {
        (Some(owner), Some(token)) => Ok(Some((owner, token))),
        _ => Err(malformed("a reply without owner and token".into())),
    }
}

/// Who leads `name` now, read from every node (`LockManager::leader`).
pub(crate) async fn leader(backend: &Arc<Backend>, name: &str) -> Result<Option<Leader>, Error> {
    check(name, "")?;
    let calls = Calls::new(backend.clone(), name, LockKind::Exclusive);
    let replies = calls.status().await;
    let needed = quorum(backend.nodes());
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    for (node, reply) in replies.into_iter().enumerate() {
        let node = backend.transport.name(node);
        match reply.map(|value| holder(name, node, value)) {
            Ok(Ok(holder)) => seen.push(Some(holder)),
            Ok(Err(error)) => return Err(error),
            Err(failure) => {
                failures.push(failure);
                seen.push(None);
            }
        }
    }
    leader_view(&seen, needed, None).ok_or_else(|| Error::NoQuorum {
        resource: name.to_string(),
        needed,
        failures,
    })
}

/// Leadership won by [`LockManager::campaign`](crate::LockManager::campaign): its epoch, its value, and the loss signal.
/// [`Leadership::resign`] hands it to the next candidate at once; dropping it resigns in the
/// background.
pub struct Leadership {
    guard: LockGuard,
    /// The guard's token, committed before the leadership was reported.
    epoch: u64,
    watchdog: Option<Watchdog>,
    ttl: Duration,
    value: String,
}

impl Leadership {
    /// Leadership under `guard`, its epoch committed first (`LockGuard::token`).
    pub(crate) async fn new(
        guard: LockGuard,
        ttl: Duration,
        value: &str,
    ) -> Result<Leadership, Error> {
        let epoch = guard.token().await?;
        let watchdog = Some(guard.watchdog(ttl));
        Ok(Leadership {
            guard,
            epoch,
            watchdog,
            ttl,
            value: value.to_string(),
        })
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        self.guard.resource()
    }

    /// The epoch: this leadership's fencing token, larger than every earlier leader's. Pass it
    /// to guarded writes so that a deposed leader's writes are refused.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The value observers read.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The candidate id observers see with the value.
    pub fn id(&self) -> &str {
        split_owner(self.guard.owner()).0
    }

    /// What work done as leader sees: the epoch (as its token) and the loss signal.
    pub fn context(&self) -> LockContext {
        self.guard.context()
    }

    /// True once leadership is lost (see [`Leadership::lost`]).
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Resolves once when leadership is lost: at its renew deadline without a confirmed
    /// extension, or when the nodes refused one (docs/election.md, the lease-loss contract).
    pub async fn lost(&self) {
        self.guard.lost_signal().cancelled().await
    }

    /// Changes the value observers read, keeping leadership and epoch. Fails with
    /// [`Error::NoQuorum`] or [`Error::LockLost`] when a quorum did not take it (the value
    /// observers read is then the old one, or none).
    pub async fn proclaim(&mut self, value: &str) -> Result<(), Error> {
        check(self.name(), value)?;
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop().await;
        }
        let id = self.id().to_string();
        let new = if value.is_empty() {
            id
        } else {
            format!("{id} {value}")
        };
        let result = self.guard.rename(&new).await;
        if result.is_ok() {
            self.value = value.to_string();
        }
        // The new watchdog goes on from the lease the guard shares with it (the rename kept it).
        if !self.guard.is_lost() {
            self.watchdog = Some(self.guard.watchdog(self.ttl));
        }
        result
    }

    /// Gives leadership up: the watchdog stops before the release is sent (no extension after
    /// it), and the next candidate queued is granted at once.
    pub async fn resign(mut self) -> Result<(), Error> {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop().await;
        }
        self.guard.release().await
    }
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("name", &self.name())
            .field("epoch", &self.epoch())
            .field("value", &self.value)
            .finish()
    }
}

#[cfg(test)]
#[path = "election_tests.rs"]
mod tests;
