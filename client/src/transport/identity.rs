//! Which redis-server a connection reached, so that one server never counts twice in a quorum.
//!
//! A URL's text does not say which server it reaches: `localhost` and `127.0.0.1`, a sentinel
//! group's master and the same master given directly, two seeds of one Redis Cluster all name
//! one process. Counted as two nodes, that one process made a quorum alone (issue 48: `--nodes
//! A,A,X` let two processes hold one lock). So every new connection, before its first request,
//! reads the server's `run_id` (`DLOCK.RUNID`, or `INFO server` from a module older than that
//! command: one per process, the same whatever address reached it, new after a restart) and
//! claims it for its quorum node in the manager's [`Registry`]. A server another node already claimed is refused: the connection is dropped,
//! the node's calls fail from then on without a request sent, and the manager refuses every
//! acquisition with [`crate::Error::InvalidArgument`] naming both nodes.
//!
//! The cost is one round trip per new connection; connections are long-lived, and requests pay
//! nothing. A server that cannot say its run_id (an ACL user without `DLOCK.RUNID`, or without
//! `INFO` on an older module) is refused too, with what to allow: a quorum that cannot be
//! checked is not trusted.
//!
//! A claim lasts as long as the manager: it moves only when its place (a URL's server, a
//! sentinel group's master, a cluster master's address) shows another run_id — a restart, or the
//! group's new master after a failover — and the old one is let go then. A server a node no
//! longer uses (a master gone from a cluster's slot map) stays claimed: listing it as another
//! node is refused. Every client keeps this one rule (docs/connecting.md); none relies on when a
//! server object happens to be dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Which quorum node reaches each server, for one manager.
pub struct Registry {
    /// The nodes' names (URLs without passwords), by index.
    names: Vec<String>,
    state: Mutex<State>,
    /// True once every node has been met: its server identified, or a call of it ended.
    met_all: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// A server's run_id -> the node reaching it, and how many of that node's servers (a
    /// cluster's seed and a master may be one process under two addresses) last saw it.
    owners: HashMap<String, (usize, usize)>,
    /// The first duplicate found, in words: every acquisition is refused with it from then on.
    refusal: Option<String>,
    /// The nodes refused as reaching another node's server: their calls fail at once.
    refused: HashMap<usize, String>,
    /// The nodes met so far (see [`Registry::met`]).
    met: Vec<bool>,
}

impl Registry {
    pub fn new(names: Vec<String>) -> Arc<Registry> {
        let state = State {
            met: vec![false; names.len()],
            ..State::default()
        };
        Arc::new(Registry {
            names,
            state: Mutex::new(state),
            met_all: tokio::sync::watch::Sender::new(false),
        })
    }

    /// `member` was met: a connection of it identified its server (or was refused), or a call
    /// of it ended (a node down counts: there is nothing to identify until it is back).
    pub fn met(&self, member: usize) {
        let mut state = self.state();
        if let Some(met) = state.met.get_mut(member) {
            *met = true;
        }
        if state.met.iter().all(|&met| met) {
            self.met_all.send_replace(true);
        }
    }

    /// Waits, at most `within`, until every node has been met once. A lock won by a manager's
    /// first call may count a node's grant while the connection of another node that reaches
    /// the same server is still being made; waiting for it makes that first call the one
    /// refused. Only the first calls wait: each node is met once.
    pub async fn meet_all(&self, within: Duration) {
        let mut met = self.met_all.subscribe();
        let _ = tokio::time::timeout(within, met.wait_for(|&all| all)).await;
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the manager refuses: two of its nodes reach one server.
    pub fn refusal(&self) -> Option<String> {
        self.state().refusal.clone()
    }

    /// Why `member` is refused, if it reaches a server another node reaches.
    pub fn refused(&self, member: usize) -> Option<String> {
        self.state().refused.get(&member).cloned()
    }

    /// `member` sees `run_id` where it saw `previous` (a restart, or another master after a
    /// failover): the old one is let go, the new one claimed, unless another node holds it.
    fn claim(&self, member: usize, run_id: &str, previous: Option<&str>) -> Result<(), String> {
        let mut state = self.state();
        if let Some(&(owner, _)) = state.owners.get(run_id) {
            if owner != member {
                let why = self.duplicate(owner, member, run_id);
                state.refusal.get_or_insert_with(|| why.clone());
                state.refused.insert(member, why.clone());
                return Err(why);
            }
        }
        state
            .owners
            .entry(run_id.to_string())
            .or_insert((member, 0))
            .1 += 1;
        if let Some(previous) = previous {
            release(&mut state, previous);
        }
        Ok(())
    }

    /// The refusal's words: both nodes in the order given, whichever connected first.
    fn duplicate(&self, a: usize, b: usize, run_id: &str) -> String {
        let name = |i: usize| self.names.get(i).map_or("?", String::as_str);
        let (first, second) = (a.min(b), a.max(b));
        format!(
            "nodes {} and {} are the same server (run_id {run_id}): list each server once",
            name(first),
            name(second)
        )
    }
}

fn release(state: &mut State, run_id: &str) {
    if let Some(entry) = state.owners.get_mut(run_id) {
        entry.1 = entry.1.saturating_sub(1);
        if entry.1 == 0 {
            state.owners.remove(run_id);
        }
    }
}

/// One place in the registry (a plain node's server, a cluster master's address, a sentinel
/// group's master whichever server it is): the run_id its connections last showed. Clones share
/// the place (every master a sentinel group names in turn); [`Identity::another`] makes a new one.
#[derive(Clone)]
pub struct Identity {
    registry: Arc<Registry>,
    member: usize,
    seen: Arc<Mutex<Option<String>>>,
}

impl Identity {
    pub fn new(registry: &Arc<Registry>, member: usize) -> Identity {
        Identity {
            registry: registry.clone(),
            member,
            seen: Arc::new(Mutex::new(None)),
        }
    }

    /// The quorum node's index.
    pub fn member(&self) -> usize {
        self.member
    }

    /// The same node's identity for another of its servers (a cluster's other masters).
    pub fn another(&self) -> Identity {
        Identity::new(&self.registry, self.member)
    }

    /// Claims the server whose run_id is `run_id` (read on a connection just made, before any
    /// request on it; `None`: its `INFO server` had none); the reason to refuse it otherwise.
    pub fn check(&self, run_id: Option<&str>) -> Result<(), String> {
        let checked = match run_id.filter(|id| !id.is_empty()) {
            Some(run_id) => self.settle(run_id),
            None => Err("cannot tell which server this is: INFO server has no run_id".into()),
        };
        self.registry.met(self.member);
        checked
    }

    /// Claims `run_id` for this server, letting go of the one it showed before.
    fn settle(&self, run_id: &str) -> Result<(), String> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.as_deref() == Some(run_id) {
            return Ok(());
        }
        self.registry.claim(self.member, run_id, seen.as_deref())?;
        *seen = Some(run_id.to_string());
        Ok(())
    }
}

/// Whether `said` (an error reply, code first) is the server not knowing the command: a module
/// older than `DLOCK.RUNID` (or none), whose run_id `INFO server` still gives.
pub fn unknown_command(said: &str) -> bool {
    said.to_ascii_lowercase().starts_with("err unknown command")
}

/// The run_id in a `DLOCK.RUNID` reply that is not an error, or what came instead (in words:
/// the reply said, never an ACL advice that would not cure it).
pub fn read_run_id(reply: &redis::Value) -> Result<String, String> {
    use redis::Value;
    let text = match reply {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => text.clone(),
        Value::Nil => return Err(unreadable("a nil reply, not a run_id")),
        other => {
            let kind = match other {
                Value::Int(_) => "an integer",
                Value::Array(_) | Value::Set(_) | Value::Push { .. } => "an array",
                Value::Map(_) | Value::Attribute { .. } => "a map",
                _ => "not a string",
            };
            return Err(unreadable(&format!("an unexpected reply type ({kind})")));
        }
    };
    match text.trim() {
        "" => Err(unreadable("an empty run_id")),
        id => Ok(id.to_string()),
    }
}

fn unreadable(what: &str) -> String {
    format!("cannot tell which server this is: DLOCK.RUNID answered {what}")
}

/// Why a server that answered `DLOCK.RUNID` with an error (`said`, code first; an unknown
/// command is told apart before) is refused: the ACL advice only for a permission refused.
pub fn run_id_refused(said: &String) -> String {
    let code = said.split_whitespace().next().unwrap_or_default();
    match code {
        "NOPERM" => format!(
            "cannot tell which server this is (DLOCK.RUNID refused: {said}): allow the user \
             DLOCK.RUNID (+dlock.runid; +@dlock has it on Redis 7.2+), which dlock reads the \
             server's run_id with"
        ),
        "LOADING" => format!(
            "cannot tell which server this is: the server is loading its data ({said}): try \
             again when it is up"
        ),
        _ => format!("cannot tell which server this is (DLOCK.RUNID answered {said})"),
    }
}

/// Why a server that refused `INFO server` (`error`; a module older than `DLOCK.RUNID`) is
/// refused.
pub fn info_refused(error: &impl std::fmt::Display) -> String {
    format!(
        "cannot tell which server this is (INFO server refused: {error}): allow the user INFO \
         (+info), which dlock reads the server's run_id with"
    )
}

/// The `run_id` field of an `INFO server` reply.
pub fn run_id(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Arc<Registry> {
        Registry::new(vec![
            "redis://a:1".into(),
            "redis://b:2".into(),
            "redis://c:3".into(),
        ])
    }

    #[test]
    fn the_run_id_is_read_from_info_server() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:3f2a\r\ntcp_port:6379\r\n";
        assert_eq!(run_id(info), Some("3f2a"));
        assert_eq!(run_id("# Server\r\nrun_id:\r\n"), None);
        assert_eq!(run_id(""), None);
    }

    #[test]
    fn a_server_reached_by_two_nodes_is_refused_naming_both_in_order() {
        let registry = registry();
        let (first, second) = (Identity::new(&registry, 2), Identity::new(&registry, 0));
        assert_eq!(first.settle("same"), Ok(()));
        let why = second.settle("same").unwrap_err();
        assert_eq!(
            why,
            "nodes redis://a:1 and redis://c:3 are the same server (run_id same): list each \
             server once"
        );
        assert_eq!(registry.refusal(), Some(why.clone()));
        assert_eq!(registry.refused(0), Some(why));
        assert_eq!(registry.refused(2), None, "the first node keeps working");
    }

    #[test]
    fn distinct_servers_and_one_node_s_aliases_are_fine() {
        let registry = registry();
        let (a, b) = (Identity::new(&registry, 0), Identity::new(&registry, 1));
        assert_eq!(a.settle("one"), Ok(()));
        assert_eq!(b.settle("two"), Ok(()));
        let alias = a.another(); // a cluster's seed and a master: one process, one node
        assert_eq!(alias.settle("one"), Ok(()));
        assert_eq!(registry.refusal(), None);
    }

    #[test]
    fn a_restart_lets_the_old_run_id_go() {
        let registry = registry();
        let (a, b) = (Identity::new(&registry, 0), Identity::new(&registry, 1));
        assert_eq!(a.settle("before"), Ok(()));
        assert_eq!(a.settle("after"), Ok(()));
        assert_eq!(b.settle("before"), Ok(()), "that process is gone");
        assert!(b.settle("after").is_err(), "node 0's server now");
    }

    #[test]
    fn a_claim_outlives_its_server_and_moves_only_with_its_place() {
        let registry = registry();
        let master = Identity::new(&registry, 0);
        assert_eq!(master.settle("old"), Ok(()));
        drop(master); // a cluster master gone from the slot map: still this node's
        assert!(Identity::new(&registry, 1).settle("old").is_err());
        let group = Identity::new(&registry, 0);
        let (first, next) = (group.clone(), group.clone()); // a sentinel group's masters in turn
        assert_eq!(first.settle("m1"), Ok(()));
        assert_eq!(
            next.settle("m2"),
            Ok(()),
            "a failover: the group's place moves"
        );
        assert_eq!(
            Identity::new(&registry, 2).settle("m1"),
            Ok(()),
            "m1 let go"
        );
        assert!(Identity::new(&registry, 2).settle("m2").is_err());
    }

    #[test]
    fn a_run_id_reply_says_what_came_instead_of_one() {
        use redis::Value;
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(read_run_id(&bulk("3f2a")), Ok("3f2a".to_string()));
        let empty = read_run_id(&bulk("")).unwrap_err();
        assert!(empty.ends_with("answered an empty run_id"), "{empty}");
        assert!(!empty.contains("INFO"), "{empty}");
        let nil = read_run_id(&Value::Nil).unwrap_err();
        assert!(nil.contains("a nil reply"), "{nil}");
        let array = read_run_id(&Value::Array(vec![bulk("abc")])).unwrap_err();
        assert!(
            array.ends_with("an unexpected reply type (an array)"),
            "{array}"
        );
        for why in [empty, nil, array] {
            assert!(!why.contains("allow the user"), "{why}");
        }
    }

    #[test]
    fn only_a_permission_refused_gets_the_acl_advice() {
        let noperm = "NOPERM User app has no permissions to run the 'dlock.runid' command";
        assert!(run_id_refused(&noperm.to_string()).contains("+dlock.runid"));
        let loading = run_id_refused(&"LOADING Redis is loading the dataset in memory".into());
        assert!(
            loading.contains("the server is loading its data"),
            "{loading}"
        );
        assert!(loading.contains("try again when it is up"), "{loading}");
        assert!(!loading.contains("allow the user"), "{loading}");
        let other = run_id_refused(&"ERR something else".into());
        assert!(!other.contains("allow the user"), "{other}");
        assert!(other.contains("ERR something else"), "{other}");
    }

    #[test]
    fn an_unknown_command_is_told_from_a_refusal() {
        let unknown = "ERR unknown command 'DLOCK.RUNID', with args beginning with: ";
        assert!(unknown_command(unknown));
        assert!(!unknown_command(
            "NOPERM User app has no permissions to run the 'dlock.runid' command"
        ));
    }
}
