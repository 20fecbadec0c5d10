//! Tentative grants: a grant made for a ticketed request stays *tentative* until the owner's
//! FENCE commits it, and a request with a smaller ticket may wound (revoke) it. Each owner of a
//! resource has at most one mark; a mark describes the owner's entries only while their token is
//! the one it was made for (the holder may have been released and granted again since).

use std::collections::{BTreeMap, BTreeSet};

use crate::holders::Holder;

/// A mark: the grant's token and the ticket it was made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mark {
    pub token: u64,
    pub ticket: u64,
}

/// The tentative grants of one resource, by owner and by ticket: marking, unmarking and finding
/// the largest ticket are logarithmic in their number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Tentatives {
    by_owner: BTreeMap<Vec<u8>, Mark>,
    by_ticket: BTreeSet<(u64, Vec<u8>)>,
}

impl Tentatives {
    /// No marks (a const, so a resource nobody waits on shares one empty set).
    pub const NONE: Tentatives = Tentatives {
        by_owner: BTreeMap::new(),
        by_ticket: BTreeSet::new(),
    };

    pub fn is_empty(&self) -> bool {
        self.by_owner.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_owner.len()
    }

    /// The owner's grant of `token` is tentative for `ticket` (replacing its earlier mark).
    pub fn mark(&mut self, owner: &[u8], token: u64, ticket: u64) {
        self.unmark(owner);
        self.by_owner.insert(owner.to_vec(), Mark { token, ticket });
        self.by_ticket.insert((ticket, owner.to_vec()));
    }

    /// The owner's grant was committed, released or revoked.
    pub fn unmark(&mut self, owner: &[u8]) {
        if let Some(mark) = self.by_owner.remove(owner) {
            self.by_ticket.remove(&(mark.ticket, owner.to_vec()));
        }
    }

    pub fn clear(&mut self) {
        self.by_owner.clear();
        self.by_ticket.clear();
    }

    /// The ticket `holder` is tentative for, if its owner's mark describes it.
    pub fn ticket_of(&self, holder: &Holder<'_>) -> Option<u64> {
        self.by_owner
            .get(holder.owner)
            .filter(|m| m.token == holder.token)
            .map(|m| m.ticket)
    }

    /// The owners marked for a ticket above `ticket`, largest ticket first.
    pub fn above(&self, ticket: u64) -> impl Iterator<Item = (u64, &[u8])> {
        self.by_ticket
            .iter()
            .rev()
            .take_while(move |(t, _)| *t > ticket)
            .map(|(t, owner)| (*t, owner.as_slice()))
    }

    /// The owner's mark, if it has one.
    pub fn get(&self, owner: &[u8]) -> Option<Mark> {
        self.by_owner.get(owner).copied()
    }

    /// Every mark, by owner.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Mark)> {
        self.by_owner.iter().map(|(o, m)| (o.as_slice(), *m))
    }
}
