//! Following an election (docs/election.md): each node is asked `DLOCK.OBSERVE name AFTER
//! token OWNER owner`, which the node answers when its holder differs from the one named (or
//! its lease ends), so nobody polls; the answers go to one task that keeps what each node holds
//! and emits the leader (by `election::leader_view`) each time it changes, in order.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::backend::Backend;
use crate::calls::Calls;
use crate::commands::Request;
use crate::election::{check, holder, leader_view, Leader, Seen};
use crate::errors::{Error, NodeFailure};
use crate::kind::LockKind;
use crate::timing::quorum;

/// How long one `DLOCK.OBSERVE` may block on a node before it is asked again.
const OBSERVE_FOR: Duration = Duration::from_secs(30);

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

/// Follows who leads `name` (`LockManager::observe`). Must be called within a Tokio runtime.
pub(crate) fn observe(backend: &Arc<Backend>, name: &str) -> Result<Observer, Error> {
    check(name, "")?;
    let calls = Calls::new(backend.clone(), name, LockKind::Exclusive);
    let nodes = backend.nodes();
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

/// How long a new leader whose epoch no majority shows yet is held back: a grant being committed
/// shows each node's own token for the moment its FENCE takes (a round trip), then the epoch on
/// a majority; with committed nodes down it stays so, and is shown after this.
const COMMIT_GRACE: Duration = Duration::from_millis(250);

/// What each node holds, and what was shown.
struct Gathered {
    name: String,
    needed: usize,
    seen: Vec<Option<Seen>>,
    failures: Vec<Option<NodeFailure>>,
    heard: Vec<bool>,
    shown: Option<Option<Option<Leader>>>,
}

impl Gathered {
    /// A node's report; the view if it is news (`None`: nothing to show).
    fn heard(&mut self, node: usize, report: Result<Seen, NodeFailure>) -> Option<View> {
        self.heard[node] = true;
        match report {
            Ok(holder) => (self.seen[node], self.failures[node]) = (Some(holder), None),
            Err(failure) => (self.seen[node], self.failures[node]) = (None, Some(failure)),
        }
        let previous = self.shown.clone().flatten().flatten();
        let view = leader_view(&self.seen, self.needed, previous.as_ref());
        // Until every node answered once, only a leader is news: three of five nodes may not
        // show the leader yet (a grant not committed everywhere), and a fourth would.
        let undecided = !matches!(view, Some(Some(_))) && self.heard.iter().any(|h| !h);
        (!undecided && self.shown.as_ref() != Some(&view)).then_some(view)
    }

    /// A leader not shown before whose epoch is on fewer than a majority: its grant may still
    /// be being committed.
    fn uncommitted(&self, view: &View) -> bool {
        let Some(Some(leader)) = view else {
            return false;
        };
        let shown_id = self.shown.clone().flatten().flatten().map(|l| l.id);
        let on = |s: &&Option<Seen>| match s {
            Some(Some((owner, token))) => {
                *token == leader.epoch && crate::election::split_owner(owner).0 == leader.id
            }
            _ => false,
        };
        shown_id.as_deref() != Some(leader.id.as_str())
            && self.seen.iter().filter(on).count() < self.needed
    }

    /// Sends `view`; false once nobody listens.
    async fn show(
        &mut self,
        view: View,
        out: &mpsc::Sender<Result<Option<Leader>, Error>>,
    ) -> bool {
        let change = view.clone().ok_or_else(|| Error::NoQuorum {
            resource: self.name.clone(),
            needed: self.needed,
            failures: self.failures.iter().flatten().cloned().collect(),
        });
        self.shown = Some(view);
        out.send(change).await.is_ok()
    }
}

/// Who leads: a leader, nobody, or unknown (`None`).
type View = Option<Option<Leader>>;

/// Keeps each node's holder and sends the leader each time it changes (a new leader whose epoch
/// no majority shows yet after [`COMMIT_GRACE`]).
async fn gather(
    name: String,
    nodes: usize,
    mut reports: mpsc::Receiver<Report>,
    out: mpsc::Sender<Result<Option<Leader>, Error>>,
) {
    let mut state = Gathered {
        name,
        needed: quorum(nodes),
        seen: vec![None; nodes],
        failures: vec![None; nodes],
        heard: vec![false; nodes],
        shown: None,
    };
    let mut pending: Option<(View, tokio::time::Instant)> = None;
    loop {
        let due = pending.as_ref().map(|(_, at)| *at);
        let report = tokio::select! {
            report = reports.recv() => report,
            _ = sleep_until_some(due) => {
                if let Some((view, _)) = pending.take() {
                    if !state.show(view, &out).await {
                        return;
                    }
                }
                continue;
            }
        };
        let Some((node, report)) = report else {
            return;
        };
        let Some(view) = state.heard(node, report) else {
            pending = None; // back to what is shown
            continue;
        };
        if state.uncommitted(&view) {
            let at = due.unwrap_or_else(|| tokio::time::Instant::now() + COMMIT_GRACE);
            pending = Some((view, at));
            continue;
        }
        pending = None;
        if !state.show(view, &out).await {
            return;
        }
    }
}

/// Sleeps until `at`, or forever.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
