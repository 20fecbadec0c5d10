//! Several resources of one node at once, all or nothing (docs/multi.md): the rules of a *set*
//! request, built on the one-resource rules of [`crate::rules`].
//!
//! - A set is granted only when every member could be granted alone: each member's decision is
//!   the one-resource decision for the same owner and rank, and the set takes the weakest of
//!   them. Nothing is written unless everything can be (validate before mutating).
//! - A set waits in the queue of every member at once, holding nothing. Every queue of a node
//!   follows one node-wide order (rank, then a node-wide arrival number), so the smallest
//!   waiter of the node heads every queue it is in: no cycle of queue heads can form, and it is
//!   served as soon as its members' leases end (no deadlock, no starvation).
//! - A set at the head of a member's queue keeps that member idle while another member is
//!   still held (later requests do not overtake it). That is the price of fairness, bounded by
//!   [`MAX_SET`]: a set idles at most `MAX_SET - 1` free keys.
//! - A set is one hold: one owner, one lease, one token on the node. A wound that revokes any
//!   member of a tentative set revokes the whole set, and a member lost by any means (DEL,
//!   RENAME, expiry, eviction) loses the set (the node gives back the rest at the owner's next
//!   EXTENDALL or FENCEALL, which answer "lost").

use crate::rules::{Decision, Serve, Victim};

/// Most members a set may have: the fairness rule idles at most this many keys minus one.
pub const MAX_SET: usize = 16;

/// What a set ACQUIRE does, from its members' one-resource decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetDecision {
    /// Every member is free and nobody is ranked ahead on any: one token for all.
    Grant,
    /// The owner holds every member already, under one token: a new lease, the same token.
    Renew { token: u64 },
    /// Revoke these tentative entries (member index, victims), then grant.
    Wound { victims: Vec<(usize, Vec<Victim>)> },
    /// Queue the request on every member.
    Enqueue,
    /// Not available, not waiting: nil.
    Contended,
    /// The member at this index refuses the request (another kind, or its owner holds it
    /// otherwise than the set asks): the member's decision says why.
    Refused { member: usize, why: Decision },
}

/// Combines the members' decisions (in the request's key order). An error on any member wins;
/// then not-available; then wounds; a grant only when all grant.
pub fn decide_set(members: &[Decision]) -> SetDecision {
    if let Some(refused) = refusal(members) {
        return refused;
    }
    if members.contains(&Decision::Enqueue) {
        return SetDecision::Enqueue;
    }
    if members.contains(&Decision::Contended) {
        return SetDecision::Contended;
    }
    let victims: Vec<(usize, Vec<Victim>)> = members
        .iter()
        .enumerate()
        .filter_map(|(i, d)| match d {
            Decision::Wound { victims } => Some((i, victims.clone())),
            _ => None,
        })
        .collect();
    if !victims.is_empty() {
        return SetDecision::Wound { victims };
    }
    SetDecision::Grant
}

/// The first member that refuses outright, or a set the owner holds only in part (or under
/// different tokens): asking again for the same set renews it, anything else is refused.
fn refusal(members: &[Decision]) -> Option<SetDecision> {
    let refused = |member: usize, why: &Decision| SetDecision::Refused {
        member,
        why: why.clone(),
    };
    for (i, d) in members.iter().enumerate() {
        match d {
            Decision::WrongKind { .. } | Decision::UpgradeRefused | Decision::HoldLimit => {
                return Some(refused(i, d))
            }
            Decision::Downgrade { .. } => return Some(refused(i, d)),
            _ => {}
        }
    }
    let renewed: Vec<(usize, u64)> = members
        .iter()
        .enumerate()
        .filter_map(|(i, d)| match d {
            Decision::Renew { token, .. } => Some((i, *token)),
            _ => None,
        })
        .collect();
    let (first, token) = *renewed.first()?;
    let whole = renewed.len() == members.len() && renewed.iter().all(|&(_, t)| t == token);
    Some(match whole {
        true => SetDecision::Renew { token },
        false => refused(first, &members[first]),
    })
}

/// What a handoff does with a set waiter that heads the queue of the key that freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetServe {
    /// It heads every member's queue and every member can be granted: grant them all.
    Grant,
    /// Not yet: it keeps its places (and the keys it heads stay idle for it).
    Wait,
    /// A member can never be granted to it (another kind, or held by the owner otherwise):
    /// answer it with that member's error.
    Fail { member: usize, why: Serve },
}

/// `members[i]`: `None` when the set does not head member i's queue, else what serving it
/// there would do.
pub fn serve_set(members: &[Option<Serve>]) -> SetServe {
    for (i, m) in members.iter().enumerate() {
        match m {
            Some(why @ Serve::WrongKind { .. }) => {
                return SetServe::Fail {
                    member: i,
                    why: *why,
                }
            }
            Some(why @ Serve::Grant { downgrade: Some(_) }) => {
                return SetServe::Fail {
                    member: i,
                    why: *why,
                }
            }
            _ => {}
        }
    }
    let all = members
        .iter()
        .all(|m| matches!(m, Some(Serve::Grant { downgrade: None })));
    match all {
        true => SetServe::Grant,
        false => SetServe::Wait,
    }
}

/// Why a set's keys are refused before anything is looked at: too many, or one given twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadSet {
    Empty,
    TooMany,
    /// The member at this index repeats an earlier one.
    Repeated(usize),
}

/// Checks a set's keys: 1 to [`MAX_SET`] of them, no key twice.
pub fn check_keys<K: PartialEq>(keys: &[K]) -> Result<(), BadSet> {
    if keys.is_empty() {
        return Err(BadSet::Empty);
    }
    if keys.len() > MAX_SET {
        return Err(BadSet::TooMany);
    }
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].contains(key) {
            return Err(BadSet::Repeated(i));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "sets_tests.rs"]
mod tests;
