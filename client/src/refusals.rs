//! Refusals met while setting a connection up that waiting cannot cure — credentials or a
//! permission refused, a database the server does not have (conformance/README.md, "a refusal
//! waiting cannot cure ends the wait") — kept for one `lock()` call. Such a node is not connected
//! to again within the call: asked, it fails at once with the same words, and nothing is
//! released there (nothing was ever sent on a connection it refused). Retrying it only filled
//! the server's ACL log, about fifty connections a second for the whole wait (issue 48 F5).

use std::sync::Mutex;

use crate::attempt::Reply;
use crate::errors::NodeFailure;

/// The nodes refused so far in one call, by index.
pub struct Refusals {
    by_node: Mutex<Vec<Option<NodeFailure>>>,
}

impl Refusals {
    pub fn new(nodes: usize) -> Refusals {
        Refusals {
            by_node: Mutex::new(vec![None; nodes]),
        }
    }

    fn by_node(&self) -> std::sync::MutexGuard<'_, Vec<Option<NodeFailure>>> {
        self.by_node.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why `node` was refused earlier in this call, if it was: its reply without asking.
    pub fn of(&self, node: usize) -> Option<Reply> {
        let failure = self.by_node().get(node).cloned().flatten()?;
        Some(Reply::Failed(failure))
    }

    /// Keeps `reply` from `node` if it is a refusal waiting cannot cure.
    pub fn note(&self, node: usize, reply: &Reply) {
        if let Reply::Failed(failure) = reply {
            if failure.incurable.is_some() {
                if let Some(slot) = self.by_node().get_mut(node) {
                    *slot = Some(failure.clone());
                }
            }
        }
    }

    /// `nodes` without the refused ones (where a RELEASE would only connect to be refused).
    pub fn reachable(&self, nodes: &[usize]) -> Vec<usize> {
        let by_node = self.by_node();
        let refused = |n: usize| by_node.get(n).is_some_and(Option::is_some);
        nodes.iter().copied().filter(|&n| !refused(n)).collect()
    }

    /// Whether the refused nodes leave fewer than `needed` to grant: no attempt can succeed.
    pub fn out_of_reach(&self, needed: usize) -> bool {
        let by_node = self.by_node();
        let refused = by_node.iter().filter(|f| f.is_some()).count();
        by_node.len() - refused < needed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Incurable;

    fn refused() -> Reply {
        let failure = NodeFailure::new("redis://a:1", "authentication failed");
        Reply::Failed(failure.incurable(Some(Incurable::Refused)))
    }

    #[test]
    fn only_a_refusal_waiting_cannot_cure_is_kept() {
        let refusals = Refusals::new(3);
        refusals.note(
            0,
            &Reply::Failed(NodeFailure::new("redis://a:1", "refused")),
        );
        refusals.note(1, &Reply::Nil);
        assert_eq!(refusals.reachable(&[0, 1, 2]), vec![0, 1, 2]);
        refusals.note(2, &refused());
        assert_eq!(refusals.of(2), Some(refused()));
        assert_eq!(refusals.of(0), None);
        assert_eq!(refusals.reachable(&[0, 1, 2]), vec![0, 1]);
        assert!(
            !refusals.out_of_reach(2),
            "two nodes left for a majority of three"
        );
        refusals.note(1, &refused());
        assert!(refusals.out_of_reach(2));
    }
}
