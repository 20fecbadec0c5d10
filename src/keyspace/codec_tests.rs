//! The decoder against valid, truncated and arbitrary field streams (a proptest fuzz harness;
//! the server-side counterpart is tests/restore_fuzz.rs).

use proptest::prelude::*;

use super::*;
use crate::keyspace::FOLLOW_KEY_TTL;

#[derive(Debug, Clone)]
pub(crate) enum Field {
    U(u64),
    B(Vec<u8>),
}

/// A field stream as the RDB loader would hand it out: asking for the wrong kind fails.
pub(crate) struct Stream(pub std::vec::IntoIter<Field>);

impl Source for Stream {
    type Bytes = Vec<u8>;
    fn unsigned(&mut self) -> Option<u64> {
        match self.0.next()? {
            Field::U(v) => Some(v),
            Field::B(_) => None,
        }
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        match self.0.next()? {
            Field::B(v) => Some(v),
            Field::U(_) => None,
        }
    }
}

#[derive(Default)]
pub(crate) struct Collect(pub Vec<Field>);

impl Sink for Collect {
    fn unsigned(&mut self, value: u64) {
        self.0.push(Field::U(value));
    }
    fn bytes(&mut self, value: &[u8]) {
        self.0.push(Field::B(value.to_vec()));
    }
}

pub(crate) fn stream(fields: Vec<Field>) -> Stream {
    Stream(fields.into_iter())
}

fn record(owner: &[u8]) -> Record<'_> {
    Record {
        owner,
        token: 42,
        holds: 3,
        deadline_ms: 1_700_000_000_000,
        place: 99,
    }
}

#[test]
fn what_is_encoded_decodes_to_the_same_lock() {
    let mut out = Collect::default();
    encode(&record(b"owner"), &mut out);
    let decoded = decode(&mut stream(out.0), ENCODING_VERSION).unwrap();
    assert_eq!(
        decoded,
        Decoded {
            owner: b"owner".to_vec(),
            token: 42,
            holds: 3,
            deadline_ms: 1_700_000_000_000,
            place: Some(99)
        }
    );
}

#[test]
fn version_one_has_no_deadline_or_place() {
    let fields = vec![Field::B(b"o".to_vec()), Field::U(7), Field::U(1)];
    let decoded = decode(&mut stream(fields), 1).unwrap();
    assert_eq!((decoded.deadline_ms, decoded.place), (FOLLOW_KEY_TTL, None));
}

#[test]
fn each_bad_field_is_refused() {
    let good = || {
        vec![
            Field::B(b"o".to_vec()),
            Field::U(7),
            Field::U(1),
            Field::U(5),
            Field::U(9),
        ]
    };
    let with = |i: usize, f: Field| {
        let mut v = good();
        v[i] = f;
        v
    };
    let cases = [
        (with(0, Field::B(vec![])), DecodeError::Owner(0)),
        (with(0, Field::B(vec![b'x'; 257])), DecodeError::Owner(257)),
        (with(0, Field::U(3)), DecodeError::Truncated("owner")),
        (with(1, Field::U(0)), DecodeError::Token(0)),
        (with(1, Field::U(u64::MAX)), DecodeError::Token(u64::MAX)),
        (
            with(1, Field::U(MAX_TOKEN + 1)),
            DecodeError::Token(MAX_TOKEN + 1),
        ),
        (with(2, Field::U(0)), DecodeError::Holds(0)),
        (with(2, Field::U(65_536)), DecodeError::Holds(65_536)),
        (with(3, Field::U(0)), DecodeError::Deadline),
        (with(4, Field::B(vec![1])), DecodeError::Truncated("place")),
    ];
    for (fields, error) in cases {
        assert_eq!(decode(&mut stream(fields), 2), Err(error));
    }
}

#[test]
fn unknown_versions_are_refused_before_reading() {
    for version in [0, 3, -1, i32::MAX] {
        assert_eq!(
            decode(&mut stream(vec![]), version),
            Err(DecodeError::Version(version))
        );
        assert_eq!(
            decode_counter(&mut stream(vec![]), version),
            Err(DecodeError::Version(version))
        );
    }
}

#[test]
fn every_truncation_is_refused() {
    let mut out = Collect::default();
    encode(&record(b"owner"), &mut out);
    for len in 0..out.0.len() {
        let cut = out.0[..len].to_vec();
        assert!(
            matches!(decode(&mut stream(cut), 2), Err(DecodeError::Truncated(_))),
            "{len}"
        );
    }
}

#[test]
fn the_counter_stays_within_the_token_range() {
    assert_eq!(decode_counter(&mut stream(vec![Field::U(0)]), 2), Ok(0));
    assert_eq!(
        decode_counter(&mut stream(vec![Field::U(MAX_TOKEN)]), 2),
        Ok(MAX_TOKEN)
    );
    assert_eq!(
        decode_counter(&mut stream(vec![Field::U(u64::MAX)]), 1),
        Err(DecodeError::Counter(u64::MAX))
    );
    assert_eq!(
        decode_counter(&mut stream(vec![]), 2),
        Err(DecodeError::Truncated("counter"))
    );
}

fn any_field() -> impl Strategy<Value = Field> {
    prop_oneof![
        any::<u64>().prop_map(Field::U),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(MAX_TOKEN),
            Just(MAX_TOKEN + 1),
            Just(65_535),
            Just(65_536)
        ]
        .prop_map(Field::U),
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(Field::B),
    ]
}

/// Inputs tried by the decoder fuzz harness (recorded in docs/safety.md).
pub const FUZZ_CASES: u32 = 50_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: FUZZ_CASES, ..ProptestConfig::default() })]

    /// Any stream of fields: never a panic, and whatever is accepted is within every bound.
    #[test]
    fn arbitrary_streams_decode_to_valid_locks_or_errors(
        fields in proptest::collection::vec(any_field(), 0..8),
        version in -1i32..4,
    ) {
        if let Ok(lock) = decode(&mut stream(fields.clone()), version) {
            prop_assert!((1..=MAX_OWNER_LEN).contains(&lock.owner.len()));
            prop_assert!((1..=MAX_TOKEN).contains(&lock.token));
            prop_assert!(lock.holds >= 1 && lock.deadline_ms >= 1);
        }
        if let Ok(counter) = decode_counter(&mut stream(fields), version) {
            prop_assert!(counter <= MAX_TOKEN);
        }
    }

    /// Valid locks survive a round trip exactly.
    #[test]
    fn valid_locks_round_trip(
        owner in proptest::collection::vec(any::<u8>(), 1..=256),
        token in 1..=MAX_TOKEN,
        holds in 1u16..,
        deadline_ms in 1u64..,
        place in any::<u64>(),
    ) {
        let record = Record { owner: &owner, token, holds, deadline_ms, place };
        let mut out = Collect::default();
        encode(&record, &mut out);
        let decoded = decode(&mut stream(out.0), ENCODING_VERSION).unwrap();
        prop_assert_eq!(decoded, Decoded { owner: owner.clone(), token, holds, deadline_ms, place: Some(place) });
    }
}
