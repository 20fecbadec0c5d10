//! A resource with several holders (a shared lock or a semaphore) as it lives in Redis memory,
//! under the `dlockmany` data type, and its RDB encoding. The module's allocator is Redis's, so
//! `used_memory` sees the holders as it sees a plain lock.
//!
//! Encoding, version 1: `limit` (0 for a read/write lock), `place`, the number of holders, then
//! per holder `owner` (string), `mode` (0 exclusive, 1 shared, 2 permit), `token`, `holds`,
//! `deadline_ms`. Everything is validated before anything is allocated, as for a plain lock:
//! a crafted RESTORE payload is refused whole.

use dlock_core::group::{Entry, Mode, MAX_LIMIT};
use dlock_core::lock::{MAX_HOLDS, MAX_OWNER_LEN};
use dlock_core::MAX_TOKEN;

use super::codec::{Sink, Source};

/// The version written; bump it when the layout changes, and keep reading the old ones.
pub const GROUP_ENCODING_VERSION: i32 = 1;

/// One holder: its own owner, token, hold count and lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub owner: Box<[u8]>,
    pub mode: Mode,
    pub token: u64,
    pub holds: u16,
    pub deadline_ms: u64,
}

impl Holder {
    pub fn entry(&self) -> Entry<'_> {
        Entry {
            owner: &self.owner,
            mode: self.mode,
            token: self.token,
            holds: self.holds,
            deadline_ms: self.deadline_ms,
        }
    }
}

/// The holders of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    /// A semaphore's limit; 0 for a read/write lock.
    pub limit: u32,
    /// Where it was granted ([`super::place`]); [`super::MOVED`] once moved.
    pub place: u64,
    pub holders: Vec<Holder>,
}

impl Group {
    /// The holders whose lease has not ended at `now_ms`.
    pub fn live(&self, now_ms: u64) -> Vec<Entry<'_>> {
        self.holders
            .iter()
            .filter(|h| now_ms < h.deadline_ms)
            .map(Holder::entry)
            .collect()
    }

    /// Drops the holders whose lease ended; returns how many (leases that ran out unreleased).
    pub fn prune(&mut self, now_ms: u64) -> usize {
        let before = self.holders.len();
        self.holders.retain(|h| now_ms < h.deadline_ms);
        before - self.holders.len()
    }

    /// The latest deadline: the key lives until then.
    pub fn last_deadline(&self) -> Option<u64> {
        self.holders.iter().map(|h| h.deadline_ms).max()
    }

    /// Holders whose lease has ended at `now_ms` (counted when the value leaves the keyspace).
    pub fn ended(&self, now_ms: u64) -> usize {
        self.holders
            .iter()
            .filter(|h| h.deadline_ms <= now_ms)
            .count()
    }

    /// Where the owner's entry of `mode` is.
    pub fn position(&self, owner: &[u8], mode: Mode) -> Option<usize> {
        self.holders
            .iter()
            .position(|h| &*h.owner == owner && h.mode == mode)
    }

    /// Sets the owner's entry of `holder.mode` (replacing it, or adding it).
    pub fn upsert(&mut self, holder: Holder) {
        match self.position(&holder.owner, holder.mode) {
            Some(at) => self.holders[at] = holder,
            None => self.holders.push(holder),
        }
    }

    /// Bytes this value takes (what `MEMORY USAGE` reports for it).
    pub fn allocated_size(&self) -> usize {
        let owners: usize = self.holders.iter().map(|h| h.owner.len()).sum();
        std::mem::size_of::<Group>()
            + self.holders.capacity() * std::mem::size_of::<Holder>()
            + owners
    }
}

pub fn mode_code(mode: Mode) -> u64 {
    match mode {
        Mode::Exclusive => 0,
        Mode::Shared => 1,
        Mode::Permit => 2,
    }
}

/// Why a stored group was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupError {
    Version(i32),
    Truncated(&'static str),
    Limit(u64),
    Count(u64),
    Owner(usize),
    Mode(u64),
    Token(u64),
    Holds(u64),
    Deadline,
    /// The holders cannot coexist (a writer beside another holder, a permit in a lock, more
    /// permits than the limit, one owner twice in one mode).
    Conflict(&'static str),
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::Version(v) => {
                write!(f, "unknown encoding version {v} (this build reads 1)")
            }
            GroupError::Truncated(field) => write!(f, "missing or malformed field '{field}'"),
            GroupError::Limit(l) => write!(f, "limit {l} (allowed 0 to {MAX_LIMIT})"),
            GroupError::Count(n) => write!(f, "{n} holders (allowed 1 to {MAX_LIMIT})"),
            GroupError::Owner(len) => {
                write!(f, "owner of {len} bytes (allowed 1 to {MAX_OWNER_LEN})")
            }
            GroupError::Mode(m) => write!(f, "mode {m} (allowed 0 to 2)"),
            GroupError::Token(t) => write!(f, "token {t} (allowed 1 to {MAX_TOKEN})"),
            GroupError::Holds(h) => write!(f, "hold count {h} (allowed 1 to {MAX_HOLDS})"),
            GroupError::Deadline => write!(f, "deadline 0"),
            GroupError::Conflict(why) => write!(f, "holders that cannot coexist: {why}"),
        }
    }
}

fn field<T>(value: Option<T>, name: &'static str) -> Result<T, GroupError> {
    value.ok_or(GroupError::Truncated(name))
}

pub fn encode(group: &Group, sink: &mut impl Sink) {
    sink.unsigned(u64::from(group.limit));
    sink.unsigned(group.place);
    sink.unsigned(group.holders.len() as u64);
    for h in &group.holders {
        sink.bytes(&h.owner);
        sink.unsigned(mode_code(h.mode));
        sink.unsigned(h.token);
        sink.unsigned(u64::from(h.holds));
        sink.unsigned(h.deadline_ms);
    }
}

pub fn decode<S: Source>(source: &mut S, version: i32) -> Result<Group, GroupError> {
    if version != GROUP_ENCODING_VERSION {
        return Err(GroupError::Version(version));
    }
    let limit = field(source.unsigned(), "limit")?;
    let limit = u32::try_from(limit)
        .ok()
        .filter(|&l| l <= MAX_LIMIT)
        .ok_or(GroupError::Limit(limit))?;
    let place = field(source.unsigned(), "place")?;
    let count = field(source.unsigned(), "count")?;
    if !(1..=u64::from(MAX_LIMIT)).contains(&count) {
        return Err(GroupError::Count(count));
    }
    let mut holders = Vec::new();
    for _ in 0..count {
        holders.push(decode_holder(source)?);
    }
    let group = Group {
        limit,
        place,
        holders,
    };
    check_coexist(&group)?;
    Ok(group)
}

fn decode_holder<S: Source>(source: &mut S) -> Result<Holder, GroupError> {
    let owner = field(source.bytes(), "owner")?;
    let owner = owner.as_ref();
    if !(1..=MAX_OWNER_LEN).contains(&owner.len()) {
        return Err(GroupError::Owner(owner.len()));
    }
    let mode = match field(source.unsigned(), "mode")? {
        0 => Mode::Exclusive,
        1 => Mode::Shared,
        2 => Mode::Permit,
        other => return Err(GroupError::Mode(other)),
    };
    let token = field(source.unsigned(), "token")?;
    if !(1..=MAX_TOKEN).contains(&token) {
        return Err(GroupError::Token(token));
    }
    let holds = field(source.unsigned(), "holds")?;
    let holds = u16::try_from(holds)
        .ok()
        .filter(|&h| h >= 1)
        .ok_or(GroupError::Holds(holds))?;
    let deadline_ms = field(source.unsigned(), "deadline")?;
    if deadline_ms == 0 {
        return Err(GroupError::Deadline);
    }
    Ok(Holder {
        owner: owner.into(),
        mode,
        token,
        holds,
        deadline_ms,
    })
}

/// The rules' invariants, whatever the holders' leases: what no sequence of commands produces
/// is refused, so a crafted value cannot put the resource in a state the rules never reason
/// about.
pub fn check_coexist(group: &Group) -> Result<(), GroupError> {
    let hs = &group.holders;
    let permits = hs.iter().filter(|h| h.mode == Mode::Permit).count();
    if group.limit == 0 && permits > 0 {
        return Err(GroupError::Conflict("a permit in a read/write lock"));
    }
    if group.limit > 0 && (permits != hs.len() || permits > group.limit as usize) {
        return Err(GroupError::Conflict(
            "a semaphore holds only its limit of permits",
        ));
    }
    let writers: Vec<&Holder> = hs.iter().filter(|h| h.mode == Mode::Exclusive).collect();
    if let Some(writer) = writers.first() {
        let others_own = hs.iter().all(|h| h.owner == writer.owner);
        if writers.len() > 1 || !others_own {
            return Err(GroupError::Conflict(
                "an exclusive holder beside another owner",
            ));
        }
    }
    for (i, h) in hs.iter().enumerate() {
        if hs[..i]
            .iter()
            .any(|o| o.owner == h.owner && o.mode == h.mode)
        {
            return Err(GroupError::Conflict("one owner twice in one mode"));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
