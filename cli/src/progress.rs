//! The waiting line of `dlock run` and `dlock acquire --wait`: on a terminal (stderr), one line
//! rewritten in place while the lock is awaited, giving the place in the queue, who holds the
//! lock and how much of its lease is left, and the time waited; erased once the wait ends.
//! Silent without a terminal or with --quiet. Each update asks every node DLOCK.WAITERS and
//! DLOCK.STATUS (two O(1)-ish reads; WAITERS is O(queue length)).

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use dlock_client::{Error, LockGuard, LockManager, NodeView, QueueState, Resource, WaitProbe};

/// No line for waits shorter than this (most grants are immediate).
const FIRST: Duration = Duration::from_millis(300);
const EVERY: Duration = Duration::from_millis(500);
/// Longest owner name shown in full.
const OWNER_WIDTH: usize = 40;

/// `LockManager::lock`, with the waiting line on stderr when it is a terminal and not `quiet`.
pub async fn lock(
    manager: &LockManager,
    target: Resource<'_>,
    (ttl, wait): (Duration, Duration),
    quiet: bool,
) -> Result<LockGuard, Error> {
    let probe = WaitProbe::new();
    let resource = target.name;
    let acquiring = manager.lock_probed(target, ttl, wait, &probe);
    if quiet || !std::io::stderr().is_terminal() {
        return acquiring.await;
    }
    let line = Line::default();
    tokio::select! {
        acquired = acquiring => acquired,
        never = updates(manager, resource, &probe, &line) => match never {},
    }
}

/// Rewrites `line` every [`EVERY`] from [`FIRST`] on, until dropped.
async fn updates(
    manager: &LockManager,
    resource: &str,
    probe: &WaitProbe,
    line: &Line,
) -> std::convert::Infallible {
    let started = Instant::now();
    tokio::time::sleep(FIRST).await;
    loop {
        let states = match probe.owner() {
            Some(owner) => manager.queue_state(resource, &owner).await,
            None => Vec::new(),
        };
        line.show(&describe(resource, &states, started.elapsed()));
        tokio::time::sleep(EVERY).await;
    }
}

/// `waiting for R: 2nd of 3 in queue · held by O (4.2s of lease left) · waited 12.0s`
pub fn describe(resource: &str, states: &[NodeView<QueueState>], waited: Duration) -> String {
    let answered: Vec<&QueueState> = states
        .iter()
        .filter_map(|s| s.state.as_ref().ok())
        .collect();
    let mut positions: Vec<usize> = answered.iter().filter_map(|s| s.position).collect();
    positions.sort_unstable();
    let waiters = answered.iter().map(|s| s.waiters).max().unwrap_or(0);
    // The median node's place: where a majority has us, give or take.
    let place = match positions.get(positions.len() / 2) {
        Some(p) => format!("{} of {waiters} in queue", ordinal(*p)),
        None if answered.is_empty() => "nodes not answering".to_string(),
        None => "not queued yet".to_string(),
    };
    let holder = holder(&answered);
    format!(
        "waiting for {resource}: {place} · {holder} · waited {:.1}s",
        waited.as_secs_f64()
    )
}

/// The holder most nodes name, with the smallest lease left any of them reports.
fn holder(answered: &[&QueueState]) -> String {
    let mut counts: Vec<(&str, usize, Duration)> = Vec::new();
    for h in answered.iter().filter_map(|s| s.holders.first()) {
        match counts.iter_mut().find(|(o, ..)| *o == h.owner) {
            Some(entry) => (entry.1, entry.2) = (entry.1 + 1, entry.2.min(h.ttl)),
            None => counts.push((&h.owner, 1, h.ttl)),
        }
    }
    let more = answered.iter().map(|s| s.holders.len()).max().unwrap_or(0);
    match counts.iter().max_by_key(|(_, n, _)| *n) {
        None => "free (a handoff is due)".to_string(),
        Some((owner, _, ttl)) => {
            let others = if more > 1 {
                format!(" and {} more", more - 1)
            } else {
                String::new()
            };
            let owner = crate::top::cut(owner, OWNER_WIDTH);
            format!(
                "held by {owner}{others} ({:.1}s of lease left)",
                ttl.as_secs_f64()
            )
        }
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The line on stderr; erased when dropped (the wait ended, or was abandoned on a signal).
#[derive(Default)]
struct Line {
    shown: Cell<bool>,
}

impl Line {
    fn show(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        // \r and erase-line: the same line, rewritten; never wider than the terminal's default.
        let _ = write!(err, "\r\x1b[K{}", crate::top::cut(text, 160));
        let _ = err.flush();
        self.shown.set(true);
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.shown.get() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlock_client::Holder;

    fn node(position: Option<usize>, waiters: usize, owner: Option<&str>) -> NodeView<QueueState> {
        let holders = owner
            .map(|o| Holder {
                owner: o.into(),
                token: 1,
                ttl: Duration::from_millis(4200),
            })
            .into_iter()
            .collect();
        NodeView {
            node: "n".into(),
            state: Ok(QueueState {
                position,
                waiters,
                holders,
            }),
        }
    }

    #[test]
    fn the_line_gives_the_median_place_the_majority_holder_and_the_time_waited() {
        let states = [
            node(Some(2), 3, Some("h")),
            node(Some(1), 3, Some("h")),
            node(Some(3), 4, Some("x")),
        ];
        assert_eq!(
            describe("orders", &states, Duration::from_millis(12_040)),
            "waiting for orders: 2nd of 4 in queue · held by h (4.2s of lease left) · waited 12.0s"
        );
        let free = [node(None, 0, None)];
        assert_eq!(
            describe("r", &free, Duration::ZERO),
            "waiting for r: not queued yet · free (a handoff is due) · waited 0.0s"
        );
        let down = [NodeView {
            node: "n".into(),
            state: Err("refused".into()),
        }];
        assert!(describe("r", &down, Duration::ZERO).contains("nodes not answering"));
        assert_eq!(
            [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).join(" "),
            "1st 2nd 3rd 4th 11th 12th 13th 21st 22nd 101st"
        );
    }
}
