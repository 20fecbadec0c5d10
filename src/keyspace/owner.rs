//! How a lock keeps its owner string in memory. Every dlock client names an acquisition by 128
//! random bits in lower-case hex (a queued acquisition adds `:<round>`), so an owner stored as
//! given spends two bytes per random byte. A run of lower-case hex digits at the start of the
//! owner is kept two digits to a byte instead: a 32-digit owner takes 17 bytes rather than 32,
//! which is what puts a lock in jemalloc's 48-byte class instead of 64 (docs/bench/server.md).
//!
//! Packed form: `pairs u8 | pairs bytes of hex digit pairs | the rest as given`. Only lower-case
//! digits are packed, so unpacking gives back the very bytes that came in; anything else
//! (upper case, a UUID's dashes, binary) is kept as given. RDB files, AOF and replication carry
//! the owner as given: the packing never leaves this process.

use dlock_core::holders::MAX_OWNER_LEN;

/// Fewest digit pairs worth packing: below this the pair count byte eats the saving.
const MIN_PAIRS: usize = 4;

/// An owner read back out of a lock, as the client sent it.
pub struct OwnerBuf {
    len: usize,
    bytes: [u8; MAX_OWNER_LEN],
}

impl Default for OwnerBuf {
    fn default() -> Self {
        OwnerBuf {
            len: 0,
            bytes: [0; MAX_OWNER_LEN],
        }
    }
}

impl OwnerBuf {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Digit pairs at the start of `owner` that packing keeps two to a byte; 0 keeps it as given.
pub fn packed_pairs(owner: &[u8]) -> usize {
    let digits = owner
        .iter()
        .position(|&b| NIBBLE[usize::from(b)] == NOT_HEX)
        .unwrap_or(owner.len());
    let pairs = (digits / 2).min(usize::from(u8::MAX));
    if pairs < MIN_PAIRS {
        0
    } else {
        pairs
    }
}

/// Bytes `owner` takes in a lock when `pairs` (from [`packed_pairs`]) are packed.
pub fn stored_len(owner: &[u8], pairs: usize) -> usize {
    match pairs {
        0 => owner.len(),
        _ => 1 + owner.len() - pairs,
    }
}

/// Writes `owner` packed with `pairs` digit pairs into `out`, which is exactly
/// [`stored_len`] bytes long.
pub fn pack(owner: &[u8], pairs: usize, out: &mut [u8]) {
    if pairs == 0 {
        out.copy_from_slice(owner);
        return;
    }
    out[0] = u8::try_from(pairs).unwrap_or(u8::MAX);
    for (byte, pair) in out[1..=pairs].iter_mut().zip(owner.chunks_exact(2)) {
        *byte = NIBBLE[usize::from(pair[0])] << 4 | NIBBLE[usize::from(pair[1])] & 0x0f;
    }
    out[1 + pairs..].copy_from_slice(&owner[2 * pairs..]);
}

/// The owner as it was sent, from its stored bytes (`packed` tells which form they are in).
pub fn unpack(stored: &[u8], packed: bool, out: &mut OwnerBuf) {
    let Some((&pairs, rest)) = stored.split_first().filter(|_| packed) else {
        let len = stored.len().min(MAX_OWNER_LEN);
        out.bytes[..len].copy_from_slice(&stored[..len]);
        out.len = len;
        return;
    };
    let pairs = usize::from(pairs).min(rest.len());
    let (digits, tail) = rest.split_at(pairs);
    let mut at = 0;
    for &byte in digits {
        out.bytes[at] = HEX[usize::from(byte >> 4)];
        out.bytes[at + 1] = HEX[usize::from(byte & 0x0f)];
        at += 2;
    }
    let tail = &tail[..tail.len().min(MAX_OWNER_LEN - at)];
    out.bytes[at..at + tail.len()].copy_from_slice(tail);
    out.len = at + tail.len();
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// [`NIBBLE`]'s mark for a byte that is not a lower-case hex digit.
const NOT_HEX: u8 = 0xff;

/// Each byte's value as a lower-case hex digit, or [`NOT_HEX`]: one load per byte on the grant
/// path instead of two range tests.
const NIBBLE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut digit = 0;
    while digit < 16 {
        table[HEX[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(owner: &[u8]) -> (Vec<u8>, usize) {
        let pairs = packed_pairs(owner);
        let mut stored = vec![0u8; stored_len(owner, pairs)];
        pack(owner, pairs, &mut stored);
        let mut out = OwnerBuf::default();
        unpack(&stored, pairs > 0, &mut out);
        (out.as_slice().to_vec(), stored.len())
    }

    #[test]
    fn a_client_owner_takes_seventeen_bytes() {
        let owner = b"6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f";
        assert_eq!(round_trip(owner), (owner.to_vec(), 17));
        let queued = b"6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f:12";
        assert_eq!(round_trip(queued), (queued.to_vec(), 20));
    }

    #[test]
    fn other_owners_are_kept_as_given() {
        for owner in [
            &b"6F1C2A9E3B7D4C5E"[..],
            b"6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f",
            b"abc",
            b"",
            b"\xff\x00binary",
        ] {
            let (back, len) = round_trip(owner);
            assert_eq!(back, owner);
            assert!(len <= owner.len().max(1), "{owner:?} grew to {len}");
        }
    }

    #[test]
    fn an_odd_digit_stays_in_the_tail() {
        assert_eq!(round_trip(b"0123456789").0, b"0123456789");
        assert_eq!(round_trip(b"012345678").0, b"012345678");
    }

    proptest! {
        #[test]
        fn any_owner_comes_back_as_sent(owner in proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b'f'), Just(b'0'), Just(b'9'), Just(b':'), any::<u8>()],
            0..=MAX_OWNER_LEN,
        )) {
            let (back, len) = round_trip(&owner);
            prop_assert_eq!(back, owner.clone());
            prop_assert!(len <= owner.len().max(1));
        }
    }
}
