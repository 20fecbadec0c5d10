//! A gate's RDB encoding, free of the Redis API (fuzzed in-process: `fuzz/`). Version 1:
//! `token`, `place` (unsigned). A token must lie in 1..=MAX_TOKEN; any place is taken (one that
//! names another key is floored where it arrives, [`super::gate`]).

use dlock_core::MAX_TOKEN;

use super::fields::{Sink, Source};

/// The encoding written; bump it when the layout changes, and keep reading the old.
pub const ENCODING_VERSION: i32 = 1;

/// One gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// The highest token written under.
    pub token: u64,
    /// Where it stands ([`super::places::place`], or [`super::places::MOVED`] once floored by a move).
    pub place: u64,
}

pub fn encode(gate: &Gate, sink: &mut impl Sink) {
    sink.unsigned(gate.token);
    sink.unsigned(gate.place);
}

/// A gate from an RDB field stream, validated.
pub fn decode<S: Source>(source: &mut S, version: i32) -> Result<Gate, String> {
    if version != ENCODING_VERSION {
        return Err(format!(
            "unknown encoding version {version} (a newer dlock's?)"
        ));
    }
    let token = source
        .unsigned()
        .ok_or("missing or malformed field 'token'")?;
    if !(1..=MAX_TOKEN).contains(&token) {
        return Err(format!("token {token} (allowed 1 to {MAX_TOKEN})"));
    }
    let place = source
        .unsigned()
        .ok_or("missing or malformed field 'place'")?;
    Ok(Gate { token, place })
}

#[cfg(test)]
mod tests {
    use super::super::fields::Payload;
    use super::*;

    #[test]
    fn a_gate_decodes_with_a_token_in_range_only() {
        let ok = [2, 0x81, 0, 0, 0, 0, 0, 0, 0, 42, 2, 7];
        assert_eq!(
            decode(&mut Payload(&ok), 1),
            Ok(Gate {
                token: 42,
                place: 7
            })
        );
        assert!(decode(&mut Payload(&[2, 0, 2, 7]), 1).is_err(), "token 0");
        assert!(decode(&mut Payload(&[2, 1]), 1).is_err(), "no place");
        assert!(decode(&mut Payload(&ok), 2).is_err(), "a newer version");
    }
}
