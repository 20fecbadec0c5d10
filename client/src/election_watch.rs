//! Following an election (docs/election.md): each node is asked `DLOCK.OBSERVE name AFTER
//! token OWNER owner`, which the node answers when its holder differs from the one named (or
//! its lease ends), so nobody polls; the answers go to one task that keeps what each node holds
//! and emits the leader (by `election::leader_view`) each time it changes, in order.

use std::time::Duration;

use redis::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::calls::Calls;
use crate::commands::Request;
use crate::election::{check, leader_view, Leader, Seen};
use crate::errors::{Error, NodeFailure};
use crate::kind::LockKind;
use crate::manager::LockManager;
use crate::timing::quorum;

/// How long one `DLOCK.OBSERVE` may block on a node before it is asked again.
const OBSERVE_FOR: Duration = Duration::from_secs(30);

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

/// Leader changes of one election, in order: the leader first, then each change (`None`:
/// nobody leads; an `Err` when too few nodes answer to tell, then the leader once they do).
/// Stops when dropped.
pub struct Observer {
    changes: mpsc::Receiver<Result<Option<Leader>, Error>>,
    _tasks: JoinSet<()>,
}

impl Observer {
    /// The next change; `None` only if the observer's tasks ended (the runtime is shutting
    /// down).
    pub async fn next(&mut self) -> Option<Result<Option<Leader>, Error>> {
        self.changes.recv().await
    }
}

impl LockManager {
    /// Follows who leads `name`: see [`Observer`]. Must be called within a Tokio runtime.
    pub fn observe(&self, name: &str) -> Result<Observer, Error> {
        check(name, "")?;
        let calls = Calls::new(self.backend.clone(), name, LockKind::Exclusive);
        let nodes = self.backend.nodes();
        let (seen_tx, seen_rx) = mpsc::channel(nodes.max(1) * 4);
        let (changes_tx, changes) = mpsc::channel(64);
        let mut tasks = JoinSet::new();
        for node in 0..nodes {
            tasks.spawn(watch_node(calls.clone(), node, seen_tx.clone()));
        }
        tasks.spawn(gather(name.to_string(), nodes, seen_rx, changes_tx));
        Ok(Observer {
            changes,
            _tasks: tasks,
        })
    }
}

/// One node's answers: what it holds, or why it could not say.
type Report = (usize, Result<Seen, NodeFailure>);

/// Asks one node again and again, each time after the holder it last reported.
async fn watch_node(calls: Calls, node: usize, out: mpsc::Sender<Report>) {
    let mut last: Option<Seen> = None;
    loop {
        let after = last.as_ref().map(|seen| match seen {
            Some((owner, token)) => (*token, owner.as_str()),
            None => (0, ""),
        });
        let request = Request::Observe {
            resource: calls.resource(),
            after,
            timeout_ms: OBSERVE_FOR.as_millis() as u64,
        };
        let name = calls.backend().transport.name(node);
        let report = match calls.call(node, request).await {
            Ok(value) => holder(calls.resource(), name, value)
                .map_err(|e| NodeFailure::new(name, e.to_string())),
            Err(failure) => Err(failure),
        };
        let failed = report.is_err();
        last = report.as_ref().ok().cloned();
        if out.send((node, report)).await.is_err() {
            return;
        }
        if failed {
            tokio::time::sleep(calls.backend().retry_pause()).await;
        }
    }
}

/// Keeps each node's holder and sends the leader each time it changes.
async fn gather(
    name: String,
    nodes: usize,
    mut reports: mpsc::Receiver<Report>,
    out: mpsc::Sender<Result<Option<Leader>, Error>>,
) {
    let needed = quorum(nodes);
    let mut seen: Vec<Option<Seen>> = vec![None; nodes];
    let mut failures: Vec<Option<NodeFailure>> = vec![None; nodes];
    let mut heard = vec![false; nodes];
    let mut shown: Option<Option<Option<Leader>>> = None;
    while let Some((node, report)) = reports.recv().await {
        heard[node] = true;
        match report {
            Ok(holder) => (seen[node], failures[node]) = (Some(holder), None),
            Err(failure) => (seen[node], failures[node]) = (None, Some(failure)),
        }
        let previous = shown.clone().flatten().flatten();
        let view = leader_view(&seen, needed, previous.as_ref());
        // Until every node answered once, only a leader is news: three of five nodes may not
        // show the leader yet (a grant not committed everywhere), and a fourth would.
        let undecided = !matches!(view, Some(Some(_))) && heard.iter().any(|h| !h);
        if undecided || shown.as_ref() == Some(&view) {
            continue;
        }
        let change = view.clone().ok_or_else(|| Error::NoQuorum {
            resource: name.clone(),
            needed,
            failures: failures.iter().flatten().cloned().collect(),
        });
        shown = Some(view);
        if out.send(change).await.is_err() {
            return;
        }
    }
}
