//! `dlock top`: each node's hot locks (DLOCK.TOP through `LockManager::top`), merged into one
//! table by resource: live on a terminal, once with `--once` (or without a terminal), or as one
//! JSON document with `--json`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::IsTerminal;
use std::time::Duration;

use clap::builder::TypedValueParser;
use dlock_client::{LockManager, NodeView, Top};
use serde_json::{json, Value};

use crate::{exit, screen};

#[derive(clap::Args)]
pub struct Options {
    /// Time between refreshes.
    #[arg(long, default_value = "2s", value_parser = crate::durations::interval)]
    pub interval: Duration,
    /// Rows per table.
    #[arg(long, default_value = "20", value_parser = clap::value_parser!(u16).range(1..=1000).map(usize::from))]
    pub rows: usize,
    /// Print the table once and exit (also what happens when stdout is not a terminal).
    #[arg(long)]
    pub once: bool,
    /// Print each node's answer as one JSON document and exit.
    #[arg(long)]
    pub json: bool,
}

pub async fn top(manager: &LockManager, opts: &Options) -> u8 {
    if opts.json {
        let views = manager.top(opts.rows).await;
        println!("{}", to_json(&views));
        return code(&views);
    }
    if opts.once || !std::io::stdout().is_terminal() {
        let views = manager.top(opts.rows).await;
        print!("{}", render(&views, opts, false));
        return code(&views);
    }
    match screen::live(
        || async { render(&manager.top(opts.rows).await, opts, true) },
        opts.interval,
    )
    .await
    {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("dlock: top: cannot drive the terminal: {e}");
            exit::CANNOT_RUN
        }
    }
}

/// 0 when some node answered, else the no-quorum code (nothing could be shown).
fn code(views: &[NodeView<Top>]) -> u8 {
    if views.iter().any(|v| v.state.is_ok()) {
        0
    } else {
        exit::NO_QUORUM
    }
}

/// Each node as it answered; scripts merge as they need.
fn to_json(views: &[NodeView<Top>]) -> Value {
    let nodes: Vec<Value> = views.iter().map(node_json).collect();
    json!({ "nodes": nodes })
}

fn node_json(view: &NodeView<Top>) -> Value {
    let top = match &view.state {
        Ok(top) => top,
        Err(reason) => return json!({ "node": view.node, "error": reason }),
    };
    let holder = |h: &dlock_client::Holder| json!({ "owner": h.owner, "token": h.token, "ttl_ms": millis(h.ttl) });
    let waiting: Vec<Value> = top
        .waiting
        .iter()
        .map(|q| {
            json!({ "resource": q.resource, "waiters": q.waiters,
                    "oldest_wait_ms": millis(q.oldest_wait), "holder": q.holder.as_ref().map(holder) })
        })
        .collect();
    let held: Vec<Value> = top
        .held
        .iter()
        .map(|l| {
            json!({ "resource": l.resource, "holder": holder(&l.holder), "holds": l.holds,
                    "waiters": l.waiters, "mode": l.mode })
        })
        .collect();
    json!({ "node": view.node, "complete": top.complete, "held_total": top.held_total,
            "waiting": waiting, "held": held })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One resource over the nodes that list it.
#[derive(Default)]
struct Merged {
    waiters: u64,
    oldest_wait: Duration,
    /// owner -> (nodes naming it, each token with the nodes naming it, smallest lease left)
    holders: BTreeMap<String, (usize, BTreeMap<u64, usize>, Duration)>,
    nodes: usize,
}

impl Merged {
    fn add_holder(&mut self, h: &dlock_client::Holder) {
        let entry = self
            .holders
            .entry(h.owner.clone())
            .or_insert((0, BTreeMap::new(), h.ttl));
        entry.0 += 1;
        *entry.1.entry(h.token).or_default() += 1;
        entry.2 = entry.2.min(h.ttl);
    }

    /// The owner most nodes name (a majority holds the lock), with its token and lease. The
    /// token is the one most nodes hold: the quorum's, committed by FENCE. A node whose grant
    /// came after the commit keeps a token of its own (larger: it was issued later) until the
    /// release; among equally many, the smaller is the committed one for the same reason.
    fn holder(&self) -> Option<(&str, u64, Duration)> {
        let (owner, (_, tokens, ttl)) = self.holders.iter().max_by_key(|(_, (n, ..))| *n)?;
        let (token, _) = tokens
            .iter()
            .max_by_key(|(token, nodes)| (**nodes, std::cmp::Reverse(**token)))?;
        Some((owner, *token, *ttl))
    }
}

/// Resources (held: resource, holder and mode) with what the nodes listing them say, most
/// waiters first.
type Rows<K> = Vec<(K, Merged)>;

fn merge(views: &[NodeView<Top>]) -> (Rows<String>, Rows<(String, String, String)>) {
    let (mut waiting, mut held) = (BTreeMap::new(), BTreeMap::new());
    for top in views.iter().filter_map(|v| v.state.as_ref().ok()) {
        for q in &top.waiting {
            let m: &mut Merged = waiting.entry(q.resource.clone()).or_default();
            (m.waiters, m.oldest_wait) =
                (m.waiters.max(q.waiters), m.oldest_wait.max(q.oldest_wait));
            m.nodes += 1;
            q.holder.iter().for_each(|h| m.add_holder(h));
        }
        // A row per holder: a shared lock's readers are rows of their own.
        for l in &top.held {
            let row = (l.resource.clone(), l.holder.owner.clone(), l.mode.clone());
            let m: &mut Merged = held.entry(row).or_default();
            m.waiters = m.waiters.max(l.waiters);
            m.nodes += 1;
            m.add_holder(&l.holder);
        }
    }
    let mut waiting: Vec<_> = waiting.into_iter().collect();
    waiting.sort_by_key(|(_, m)| std::cmp::Reverse((m.waiters, m.oldest_wait)));
    let mut held: Vec<_> = held.into_iter().collect();
    held.sort_by_key(|(_, m)| std::cmp::Reverse(m.waiters));
    (waiting, held)
}

/// The table: a header line (with the refresh interval and how to quit when `live`), the
/// resources with waiters, the held locks, unreachable nodes.
pub fn render(views: &[NodeView<Top>], opts: &Options, live: bool) -> String {
    let answered = views.iter().filter(|v| v.state.is_ok()).count();
    let nodes = crate::count(views.len(), "node");
    let mut out = format!("dlock top: {answered} of {nodes} answered");
    if live {
        let every = humantime::format_duration(opts.interval);
        let _ = write!(out, ", every {every}; q quits");
    }
    out.push_str("\n\n");
    let (waiting, held) = merge(views);
    waiting_table(&mut out, &waiting, opts.rows);
    held_table(&mut out, &held, opts.rows);
    node_notes(&mut out, views);
    out
}

/// The resources with waiters, most waiters first.
fn waiting_table(out: &mut String, waiting: &[(String, Merged)], rows: usize) {
    let _ = writeln!(
        out,
        "{:<28} {:>7} {:>10} {:<36} {:>9} {:>5}",
        "WAITING", "waiters", "oldest", "holder", "lease", "nodes"
    );
    for (resource, m) in waiting.iter().take(rows) {
        let (owner, _, ttl) = m
            .holder()
            .unwrap_or(("(free: handoff due)", 0, Duration::ZERO));
        let _ = writeln!(
            out,
            "{:<28} {:>7} {:>10} {:<36} {:>9} {:>5}",
            cut(resource, 28),
            m.waiters,
            seconds(m.oldest_wait),
            cut(owner, 36),
            seconds(ttl),
            m.nodes
        );
    }
}

/// The held locks, by resource, holder and mode.
fn held_table(out: &mut String, held: &[((String, String, String), Merged)], rows: usize) {
    let _ = writeln!(
        out,
        "\n{:<28} {:<36} {:<9} {:>20} {:>9} {:>7} {:>5}",
        "HELD", "holder", "mode", "token", "lease", "waiters", "nodes"
    );
    for ((resource, _, mode), m) in held.iter().take(rows) {
        let (owner, token, ttl) = m.holder().unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<28} {:<36} {:<9} {:>20} {:>9} {:>7} {:>5}",
            cut(resource, 28),
            cut(owner, 36),
            mode,
            token,
            seconds(ttl),
            m.waiters,
            m.nodes
        );
    }
}

/// What the table cannot show: nodes that did not answer, or answered in part.
fn node_notes(out: &mut String, views: &[NodeView<Top>]) {
    for view in views {
        match &view.state {
            Err(reason) => {
                let _ = writeln!(out, "\n{}: {reason}", view.node);
            }
            Ok(top) if !top.complete => {
                let _ = writeln!(out, "\n{}: keyspace too large, partly shown", view.node);
            }
            Ok(_) => {}
        }
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// At most `width` characters, an ellipsis marking a cut.
pub fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(owner: &str, token: u64) -> dlock_client::HeldLock {
        let holder = dlock_client::Holder {
            owner: owner.into(),
            token,
            ttl: Duration::from_secs(10),
        };
        dlock_client::HeldLock {
            resource: "job".into(),
            holder,
            holds: 1,
            waiters: 0,
            mode: "exclusive".into(),
        }
    }

    fn node(i: usize, token: u64) -> NodeView<Top> {
        let top = Top {
            held: vec![held("a:0", token)],
            held_total: 1,
            complete: true,
            ..Top::default()
        };
        NodeView {
            node: format!("redis://127.0.0.1:700{i}"),
            state: Ok(top),
        }
    }

    #[test]
    fn the_token_shown_is_the_one_most_nodes_hold_not_a_late_grants() {
        // Three nodes committed 100; two granted late and kept their own, larger, tokens.
        let views: Vec<_> = [100, 105, 100, 103, 100]
            .iter()
            .enumerate()
            .map(|(i, token)| node(i + 1, *token))
            .collect();
        let (_, held) = merge(&views);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].1.holder().map(|(_, token, _)| token), Some(100));
    }

    #[test]
    fn once_there_is_no_live_footer() {
        let opts = Options {
            interval: Duration::from_secs(2),
            rows: 20,
            once: true,
            json: false,
        };
        let views = vec![node(1, 100)];
        assert!(render(&views, &opts, false).starts_with("dlock top: 1 of 1 node answered\n"));
        assert!(render(&views, &opts, true).contains("every 2s; q quits"));
    }
}
