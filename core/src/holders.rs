//! A resource and its holders: the one model every lock is. A plain lock is the case of one
//! exclusive holder; a read/write lock has one exclusive holder or any number of shared ones; a
//! semaphore has at most `limit` permit holders. Each holder has its own owner, fencing token,
//! hold count and lease; a holder whose lease ended holds nothing.
//!
//! The rules ([`crate::rules`]) see a resource through [`Holders`], a handful of questions each
//! storage answers in O(log n) or better, so that no decision walks the holder list.

/// Longest owner accepted, in bytes.
pub const MAX_OWNER_LEN: usize = 256;
/// Largest reentrant hold count (16 bits keep a stored lock small).
pub const MAX_HOLDS: u16 = u16::MAX;
/// Largest semaphore limit (and so the most holders a resource has).
pub const MAX_LIMIT: u32 = 10_000;

/// How a holder holds a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Exclusive,
    Shared,
    Permit,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Exclusive, Mode::Shared, Mode::Permit];
}

/// What a resource is while held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A read/write lock: one exclusive holder, or shared holders (a plain lock is this kind).
    Lock,
    Semaphore {
        limit: u32,
    },
}

/// What a request asks for: a holder's mode, and for a permit the semaphore's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Want {
    #[default]
    Exclusive,
    Shared,
    Permit {
        limit: u32,
    },
}

impl Want {
    pub fn kind(self) -> Kind {
        match self {
            Want::Exclusive | Want::Shared => Kind::Lock,
            Want::Permit { limit } => Kind::Semaphore { limit },
        }
    }

    pub fn mode(self) -> Mode {
        match self {
            Want::Exclusive => Mode::Exclusive,
            Want::Shared => Mode::Shared,
            Want::Permit { .. } => Mode::Permit,
        }
    }

    /// A semaphore's limit; 0 for a lock.
    pub fn limit(self) -> u32 {
        match self {
            Want::Permit { limit } => limit,
            Want::Exclusive | Want::Shared => 0,
        }
    }
}

/// One holder, borrowed from wherever it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder<'a> {
    pub owner: &'a [u8],
    pub mode: Mode,
    pub token: u64,
    pub holds: u16,
    /// Unix milliseconds. Authoritative: past it the holder holds nothing.
    pub deadline_ms: u64,
}

impl Holder<'_> {
    pub fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.deadline_ms
    }
}

/// An owner's live entries: at most one per mode (an exclusive one and its shared side, or one
/// permit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mine<'a> {
    pub exclusive: Option<Holder<'a>>,
    pub shared: Option<Holder<'a>>,
    pub permit: Option<Holder<'a>>,
}

impl<'a> Mine<'a> {
    /// Files `h` under its mode.
    pub fn add(&mut self, h: Holder<'a>) {
        match h.mode {
            Mode::Exclusive => self.exclusive = Some(h),
            Mode::Shared => self.shared = Some(h),
            Mode::Permit => self.permit = Some(h),
        }
    }

    pub fn get(&self, mode: Mode) -> Option<Holder<'a>> {
        match mode {
            Mode::Exclusive => self.exclusive,
            Mode::Shared => self.shared,
            Mode::Permit => self.permit,
        }
    }

    /// Exclusive first.
    pub fn iter(&self) -> impl Iterator<Item = Holder<'a>> {
        [self.exclusive, self.shared, self.permit]
            .into_iter()
            .flatten()
    }

    pub fn count(&self) -> usize {
        self.iter().count()
    }

    /// The entry with the largest token (what FENCE never lowers).
    pub fn newest(&self) -> Option<Holder<'a>> {
        self.iter().max_by_key(|h| h.token)
    }
}

/// A resource's *live* holders at the moment the view was taken, as the rules ask about them.
/// An owner holds at most one entry per mode; a resource holds at most one exclusive entry, and
/// then only its owner may also hold a shared one (a downgrade).
pub trait Holders {
    /// How many live holders there are.
    fn count(&self) -> usize;
    /// The semaphore limit the resource was granted under (0 for a lock); meaningful only while
    /// [`Holders::count`] is not 0.
    fn limit(&self) -> u32;
    /// The owner's live entries (one lookup, whatever the resource holds).
    fn mine(&self, owner: &[u8]) -> Mine<'_>;
    /// The live exclusive entry, if any.
    fn exclusive(&self) -> Option<Holder<'_>>;

    /// The resource's kind while held; `None` when nobody holds it.
    fn kind(&self) -> Option<Kind> {
        match (self.count(), self.limit()) {
            (0, _) => None,
            (_, 0) => Some(Kind::Lock),
            (_, limit) => Some(Kind::Semaphore { limit }),
        }
    }
}

/// A resource as a plain list of holders with their leases, judged at `now_ms`: for the model
/// checker and tests, where resources are small. O(n) per question.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    pub holders: &'a [Holder<'a>],
    pub limit: u32,
    pub now_ms: u64,
}

impl<'a> List<'a> {
    fn live(&self) -> impl Iterator<Item = &Holder<'a>> {
        self.holders.iter().filter(|h| h.is_live(self.now_ms))
    }
}

impl Holders for List<'_> {
    fn count(&self) -> usize {
        self.live().count()
    }

    fn limit(&self) -> u32 {
        self.limit
    }

    fn mine(&self, owner: &[u8]) -> Mine<'_> {
        let mut mine = Mine::default();
        self.live()
            .filter(|h| h.owner == owner)
            .for_each(|h| mine.add(*h));
        mine
    }

    fn exclusive(&self) -> Option<Holder<'_>> {
        self.live().find(|h| h.mode == Mode::Exclusive).copied()
    }
}
