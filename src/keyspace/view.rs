//! A resource as the rules see it, whichever form stores it: nothing, one exclusive holder (the
//! compact form), or a table of holders. Every answer is O(1) or O(log n).

use dlock_core::{Holder, Holders, Kind, Mine};

use super::table::TableView;

/// The live holders of the resource under a key at one moment.
#[derive(Clone, Copy)]
pub enum View<'a> {
    /// Nobody holds it (no value, a value moved here from another key, or leases that ended).
    Free,
    /// One live exclusive holder (a plain lock).
    One(Holder<'a>),
    Table(TableView<'a>),
}

impl View<'_> {
    /// Whether someone holds it.
    pub fn is_held(&self) -> bool {
        self.count() > 0
    }

    /// The soonest lease end: when a place may free up next.
    pub fn next_deadline(&self) -> Option<u64> {
        match self {
            View::Free => None,
            View::One(h) => Some(h.deadline_ms),
            View::Table(t) => t.next_deadline(),
        }
    }

    /// The live holders, soonest lease end first.
    pub fn live(&self) -> Box<dyn Iterator<Item = Holder<'_>> + '_> {
        match self {
            View::Free => Box::new(std::iter::empty()),
            View::One(h) => Box::new(std::iter::once(*h)),
            View::Table(t) => Box::new(t.live()),
        }
    }

    /// The rule of the commands that follow a plain lock's one holder (OBSERVE, PROCLAIM):
    /// nobody (`None`), the one exclusive holder, or — when the resource is held shared or as a
    /// semaphore — its kind, which they refuse by one error ([`crate::wire::errors::plain_only`]).
    pub fn plain_holder(&self) -> Result<Option<Holder<'_>>, Kind> {
        match (self.kind(), self.sole_exclusive()) {
            (None, _) => Ok(None),
            (Some(_), Some(holder)) => Ok(Some(holder)),
            (Some(kind), None) => Err(kind),
        }
    }

    /// The single live exclusive holder, if that is all the resource holds: a plain lock.
    pub fn sole_exclusive(&self) -> Option<Holder<'_>> {
        match self {
            View::One(h) => Some(*h),
            View::Table(t) if t.count() == 1 => t.exclusive(),
            _ => None,
        }
    }
}

impl Holders for View<'_> {
    fn count(&self) -> usize {
        match self {
            View::Free => 0,
            View::One(_) => 1,
            View::Table(t) => t.count(),
        }
    }

    fn limit(&self) -> u32 {
        match self {
            View::Table(t) => t.limit(),
            View::Free | View::One(_) => 0,
        }
    }

    fn mine(&self, owner: &[u8]) -> Mine<'_> {
        match self {
            View::Free => Mine::default(),
            View::One(h) => Mine {
                exclusive: Some(*h).filter(|h| h.owner == owner),
                ..Mine::default()
            },
            View::Table(t) => t.mine(owner),
        }
    }

    fn exclusive(&self) -> Option<Holder<'_>> {
        match self {
            View::Free => None,
            View::One(h) => Some(*h),
            View::Table(t) => t.exclusive(),
        }
    }
}
