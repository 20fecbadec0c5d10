//! The RDB encoding of a lock and of the node counter, free of the Redis API so that it can be
//! fuzzed (see the tests). Every field is validated before anything is allocated; a value that
//! fails is refused whole (`ERR Bad data format` for RESTORE, a failed load otherwise).
//!
//! Version 2 (current): `owner` (string), `token`, `holds`, `deadline_ms`, `place` (unsigned).
//! Version 1 (read only): `owner`, `token`, `holds`; no deadline (the key's TTL was the lock's).

use dlock_core::lock::{MAX_HOLDS, MAX_OWNER_LEN};
use dlock_core::MAX_TOKEN;

use super::value::Record;

/// The version written; bump it when the layout changes, and keep reading the old ones.
pub const ENCODING_VERSION: i32 = 2;

/// Where decoded fields come from (Redis's RDB loader, or a test's byte stream). `None` means
/// the input ended or held something else than the field asked for.
pub trait Source {
    type Bytes: AsRef<[u8]>;
    fn unsigned(&mut self) -> Option<u64>;
    fn bytes(&mut self) -> Option<Self::Bytes>;
}

/// Where encoded fields go.
pub trait Sink {
    fn unsigned(&mut self, value: u64);
    fn bytes(&mut self, value: &[u8]);
}

/// A lock as read from an RDB, validated. `place` is `None` for version 1 (the loader knows the
/// key and fills it in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<B> {
    pub owner: B,
    pub token: u64,
    pub holds: u16,
    pub deadline_ms: u64,
    pub place: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Version(i32),
    Truncated(&'static str),
    Owner(usize),
    Token(u64),
    Holds(u64),
    Deadline,
    Counter(u64),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Version(v) => {
                write!(f, "unknown encoding version {v} (this build reads 1 and 2)")
            }
            DecodeError::Truncated(field) => write!(f, "missing or malformed field '{field}'"),
            DecodeError::Owner(len) => {
                write!(f, "owner of {len} bytes (allowed 1 to {MAX_OWNER_LEN})")
            }
            DecodeError::Token(t) => write!(f, "token {t} (allowed 1 to {MAX_TOKEN})"),
            DecodeError::Holds(h) => write!(f, "hold count {h} (allowed 1 to {MAX_HOLDS})"),
            DecodeError::Deadline => write!(f, "deadline 0"),
            DecodeError::Counter(c) => write!(f, "fencing counter {c} (allowed 0 to {MAX_TOKEN})"),
        }
    }
}

fn field<T>(value: Option<T>, name: &'static str) -> Result<T, DecodeError> {
    value.ok_or(DecodeError::Truncated(name))
}

pub fn decode<S: Source>(source: &mut S, version: i32) -> Result<Decoded<S::Bytes>, DecodeError> {
    if !(1..=ENCODING_VERSION).contains(&version) {
        return Err(DecodeError::Version(version));
    }
    let owner = field(source.bytes(), "owner")?;
    let len = owner.as_ref().len();
    if !(1..=MAX_OWNER_LEN).contains(&len) {
        return Err(DecodeError::Owner(len));
    }
    let token = field(source.unsigned(), "token")?;
    if !(1..=MAX_TOKEN).contains(&token) {
        return Err(DecodeError::Token(token));
    }
    let holds = field(source.unsigned(), "holds")?;
    let holds = u16::try_from(holds)
        .ok()
        .filter(|&h| h >= 1)
        .ok_or(DecodeError::Holds(holds))?;
    if version == 1 {
        return Ok(Decoded {
            owner,
            token,
            holds,
            deadline_ms: super::FOLLOW_KEY_TTL,
            place: None,
        });
    }
    let deadline_ms = field(source.unsigned(), "deadline")?;
    if deadline_ms == 0 {
        return Err(DecodeError::Deadline);
    }
    let place = field(source.unsigned(), "place")?;
    Ok(Decoded {
        owner,
        token,
        holds,
        deadline_ms,
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

#[cfg(test)]
#[path = "codec_tests.rs"]
pub(crate) mod tests;
