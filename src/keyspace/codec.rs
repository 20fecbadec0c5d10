//! The RDB encodings of a resource's two storage forms and of the node counter, free of the
//! Redis API so that they can be fuzzed (see the tests). Every field is validated before
//! anything is kept; a value that fails is refused whole (`ERR Bad data format` for RESTORE, a
//! failed load otherwise).
//!
//! - One exclusive holder (`dlocklock`), version 2 (current): `owner` (string), `token`,
//!   `holds`, `deadline_ms`, `place` (unsigned). Version 1 (read only): `owner`, `token`,
//!   `holds`; no deadline (the key's TTL was the lock's) and no place.
//! - Several holders (`dlockmany`), version 1: `limit` (0 for a read/write lock), `place`, the
//!   number of holders, then per holder `owner` (string), `mode` (0 exclusive, 1 shared, 2
//!   permit), `token`, `holds`, `deadline_ms`. Holders that cannot coexist are refused.
//!
//! A deadline must lie in `1..=latest` ([`Bounds`]): no lease is restored that outlives what
//! the node could grant, and no stored value is taken for an internal marker.

use dlock_core::holders::{MAX_HOLDS, MAX_LIMIT, MAX_OWNER_LEN};
use dlock_core::{Mode, MAX_TOKEN};

use super::compact::Record;
use super::holder::{Conflict, Lease, Slot};
use super::table::HolderTable;

/// The one-holder version written; bump it when the layout changes, and keep reading the old.
pub const ENCODING_VERSION: i32 = 2;
/// The several-holder version written.
pub const TABLE_ENCODING_VERSION: i32 = 1;

pub use super::fields::{Sink, Source};

/// What a decoded value may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The latest deadline accepted (unix ms).
    pub latest_deadline_ms: u64,
}

/// One exclusive holder as read from an RDB, validated. `deadline_ms` and `place` are `None`
/// for version 1 (the loader knows the key and fills the place in; the key's TTL is the
/// deadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<B> {
    pub owner: B,
    pub token: u64,
    pub holds: u16,
    pub deadline_ms: Option<u64>,
    pub place: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Version(i32),
    Truncated(&'static str),
    Owner(usize),
    Token(u64),
    Holds(u64),
    Deadline(u64, u64),
    Counter(u64),
    Limit(u64),
    Count(u64),
    Mode(u64),
    Conflict(Conflict),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Version(v) => write!(f, "unknown encoding version {v} (a newer dlock's?)"),
            DecodeError::Truncated(field) => write!(f, "missing or malformed field '{field}'"),
            DecodeError::Owner(len) => {
                write!(f, "owner of {len} bytes (allowed 1 to {MAX_OWNER_LEN})")
            }
            DecodeError::Token(t) => write!(f, "token {t} (allowed 1 to {MAX_TOKEN})"),
            DecodeError::Holds(h) => write!(f, "hold count {h} (allowed 1 to {MAX_HOLDS})"),
            DecodeError::Deadline(d, latest) => {
                write!(f, "deadline {d} (allowed 1 to {latest}, unix ms)")
            }
            DecodeError::Counter(c) => write!(f, "fencing counter {c} (allowed 0 to {MAX_TOKEN})"),
            DecodeError::Limit(l) => write!(f, "limit {l} (allowed 0 to {MAX_LIMIT})"),
            DecodeError::Count(n) => write!(f, "{n} holders (allowed 1 to {MAX_LIMIT})"),
            DecodeError::Mode(m) => write!(f, "mode {m} (allowed 0 to 2)"),
            DecodeError::Conflict(why) => write!(f, "holders that cannot coexist: {why}"),
        }
    }
}

fn field<T>(value: Option<T>, name: &'static str) -> Result<T, DecodeError> {
    value.ok_or(DecodeError::Truncated(name))
}

fn token<S: Source>(source: &mut S) -> Result<u64, DecodeError> {
    let token = field(source.unsigned(), "token")?;
    match token {
        1..=MAX_TOKEN => Ok(token),
        _ => Err(DecodeError::Token(token)),
    }
}

fn holds<S: Source>(source: &mut S) -> Result<u16, DecodeError> {
    let holds = field(source.unsigned(), "holds")?;
    u16::try_from(holds)
        .ok()
        .filter(|&h| h >= 1)
        .ok_or(DecodeError::Holds(holds))
}

fn deadline<S: Source>(source: &mut S, bounds: Bounds) -> Result<u64, DecodeError> {
    let deadline_ms = field(source.unsigned(), "deadline")?;
    match deadline_ms {
        0 => Err(DecodeError::Deadline(0, bounds.latest_deadline_ms)),
        d if d > bounds.latest_deadline_ms => {
            Err(DecodeError::Deadline(d, bounds.latest_deadline_ms))
        }
        d => Ok(d),
    }
}

fn owner<S: Source>(source: &mut S) -> Result<S::Bytes, DecodeError> {
    let owner = field(source.bytes(), "owner")?;
    match owner.as_ref().len() {
        1..=MAX_OWNER_LEN => Ok(owner),
        len => Err(DecodeError::Owner(len)),
    }
}

pub fn decode<S: Source>(
    source: &mut S,
    version: i32,
    bounds: Bounds,
) -> Result<Decoded<S::Bytes>, DecodeError> {
    if !(1..=ENCODING_VERSION).contains(&version) {
        return Err(DecodeError::Version(version));
    }
    let owner = owner(source)?;
    let (token, holds) = (token(source)?, holds(source)?);
    if version == 1 {
        return Ok(Decoded {
            owner,
            token,
            holds,
            deadline_ms: None,
            place: None,
        });
    }
    let deadline_ms = deadline(source, bounds)?;
    let place = field(source.unsigned(), "place")?;
    Ok(Decoded {
        owner,
        token,
        holds,
        deadline_ms: Some(deadline_ms),
        place: Some(place),
    })
}

pub fn encode(record: &Record<'_>, sink: &mut impl Sink) {
    sink.bytes(record.owner);
    sink.unsigned(record.token);
    sink.unsigned(u64::from(record.holds));
    sink.unsigned(record.deadline_ms);
    sink.unsigned(record.place);
}

/// The node counter saved as aux data.
pub fn decode_counter<S: Source>(source: &mut S, version: i32) -> Result<u64, DecodeError> {
    if !(1..=ENCODING_VERSION).contains(&version) {
        return Err(DecodeError::Version(version));
    }
    let counter = field(source.unsigned(), "counter")?;
    if counter > MAX_TOKEN {
        return Err(DecodeError::Counter(counter));
    }
    Ok(counter)
}

pub fn mode_code(mode: Mode) -> u64 {
    match mode {
        Mode::Exclusive => 0,
        Mode::Shared => 1,
        Mode::Permit => 2,
    }
}

pub fn encode_table(table: &HolderTable, sink: &mut impl Sink) {
    sink.unsigned(u64::from(table.limit()));
    sink.unsigned(table.place);
    sink.unsigned(table.len() as u64);
    for s in table.iter() {
        sink.bytes(&s.owner);
        sink.unsigned(mode_code(s.mode));
        sink.unsigned(s.lease.token);
        sink.unsigned(u64::from(s.lease.holds));
        sink.unsigned(s.lease.deadline_ms);
    }
}

pub fn decode_table<S: Source>(
    source: &mut S,
    version: i32,
    bounds: Bounds,
) -> Result<HolderTable, DecodeError> {
    if version != TABLE_ENCODING_VERSION {
        return Err(DecodeError::Version(version));
    }
    let limit = field(source.unsigned(), "limit")?;
    let limit = u32::try_from(limit)
        .ok()
        .filter(|&l| l <= MAX_LIMIT)
        .ok_or(DecodeError::Limit(limit))?;
    let place = field(source.unsigned(), "place")?;
    let count = field(source.unsigned(), "count")?;
    if !(1..=u64::from(MAX_LIMIT)).contains(&count) {
        return Err(DecodeError::Count(count));
    }
    let mut table = HolderTable::new(limit, place);
    for _ in 0..count {
        let slot = decode_slot(source, bounds)?;
        table.insert(slot).map_err(DecodeError::Conflict)?;
    }
    Ok(table)
}

fn decode_slot<S: Source>(source: &mut S, bounds: Bounds) -> Result<Slot, DecodeError> {
    let owner = owner(source)?;
    let mode = match field(source.unsigned(), "mode")? {
        0 => Mode::Exclusive,
        1 => Mode::Shared,
        2 => Mode::Permit,
        other => return Err(DecodeError::Mode(other)),
    };
    let lease = Lease {
        token: token(source)?,
        holds: holds(source)?,
        deadline_ms: deadline(source, bounds)?,
    };
    Ok(Slot {
        owner: owner.as_ref().into(),
        mode,
        lease,
    })
}

#[cfg(test)]
#[path = "codec_tests.rs"]
pub(crate) mod tests;
