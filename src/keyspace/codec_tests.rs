//! The decoder against valid, truncated and arbitrary field streams (a proptest fuzz harness;
//! the server-side counterpart is tests/restore_fuzz.rs).

use proptest::prelude::*;

use super::*;
use crate::keyspace::holder::{Lease, Slot};
use crate::keyspace::table::HolderTable;

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

/// Deadlines up to 2001-09-09 (1e12 ms) are accepted in these tests.
const BOUNDS: Bounds = Bounds {
    latest_deadline_ms: 1_000_000_000_000,
};

fn record(owner: &[u8]) -> Record<'_> {
    Record {
        owner,
        token: 42,
        holds: 3,
        deadline_ms: 900_000_000_000,
        place: 99,
    }
}

#[test]
fn what_is_encoded_decodes_to_the_same_lock() {
    let mut out = Collect::default();
    encode(&record(b"owner"), &mut out);
    let decoded = decode(&mut stream(out.0), ENCODING_VERSION, BOUNDS).unwrap();
    assert_eq!(
        decoded,
        Decoded {
            owner: b"owner".to_vec(),
            token: 42,
            holds: 3,
            deadline_ms: Some(900_000_000_000),
            place: Some(99)
        }
    );
}

#[test]
fn version_one_has_no_deadline_or_place() {
    let fields = vec![Field::B(b"o".to_vec()), Field::U(7), Field::U(1)];
    let decoded = decode(&mut stream(fields), 1, BOUNDS).unwrap();
    assert_eq!((decoded.deadline_ms, decoded.place), (None, None));
}

#[test]
fn each_bad_field_is_refused() {
    const LATEST: u64 = BOUNDS.latest_deadline_ms;
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
        (with(3, Field::U(0)), DecodeError::Deadline(0, LATEST)),
        (
            with(3, Field::U(LATEST + 1)),
            DecodeError::Deadline(LATEST + 1, LATEST),
        ),
        (
            with(3, Field::U(1 << 63)),
            DecodeError::Deadline(1 << 63, LATEST),
        ),
        (
            with(3, Field::U(u64::MAX)),
            DecodeError::Deadline(u64::MAX, LATEST),
        ),
        (with(4, Field::B(vec![1])), DecodeError::Truncated("place")),
    ];
    for (fields, error) in cases {
        assert_eq!(decode(&mut stream(fields), 2, BOUNDS), Err(error));
    }
}

#[test]
fn unknown_versions_are_refused_before_reading() {
    for version in [0, 3, -1, i32::MAX] {
        assert_eq!(
            decode(&mut stream(vec![]), version, BOUNDS),
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
            matches!(
                decode(&mut stream(cut), 2, BOUNDS),
                Err(DecodeError::Truncated(_))
            ),
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
        if let Ok(lock) = decode(&mut stream(fields.clone()), version, BOUNDS) {
            prop_assert!((1..=MAX_OWNER_LEN).contains(&lock.owner.len()));
            prop_assert!((1..=MAX_TOKEN).contains(&lock.token));
            let deadline = lock.deadline_ms.unwrap_or(1);
            prop_assert!(lock.holds >= 1 && (1..=BOUNDS.latest_deadline_ms).contains(&deadline));
        }
        if let Ok(table) = decode_table(&mut stream(fields.clone()), version, BOUNDS) {
            prop_assert!(!table.is_empty() && table.len() <= MAX_LIMIT as usize);
            for s in table.iter() {
                prop_assert!((1..=BOUNDS.latest_deadline_ms).contains(&s.lease.deadline_ms));
                prop_assert!((1..=MAX_TOKEN).contains(&s.lease.token) && s.lease.holds >= 1);
            }
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
        deadline_ms in 1..=BOUNDS.latest_deadline_ms,
        place in any::<u64>(),
    ) {
        let record = Record { owner: &owner, token, holds, deadline_ms, place };
        let mut out = Collect::default();
        encode(&record, &mut out);
        let decoded = decode(&mut stream(out.0), ENCODING_VERSION, BOUNDS).unwrap();
        let deadline_ms = Some(deadline_ms);
        prop_assert_eq!(decoded, Decoded { owner: owner.clone(), token, holds, deadline_ms, place: Some(place) });
    }
}

fn slot(owner: &str, mode: Mode, token: u64) -> Slot {
    Slot {
        owner: owner.as_bytes().into(),
        mode,
        lease: Lease {
            token,
            holds: 1,
            deadline_ms: 900_000_000_000 + token,
        },
    }
}

/// The fields of a table (encoded without a check, so conflicting holders can be written).
fn table_fields(limit: u32, slots: &[Slot]) -> Vec<Field> {
    let mut out = vec![
        Field::U(u64::from(limit)),
        Field::U(7),
        Field::U(slots.len() as u64),
    ];
    for s in slots {
        out.push(Field::B(s.owner.to_vec()));
        out.push(Field::U(mode_code(s.mode)));
        out.push(Field::U(s.lease.token));
        out.push(Field::U(u64::from(s.lease.holds)));
        out.push(Field::U(s.lease.deadline_ms));
    }
    out
}

fn holders_of(table: &HolderTable) -> Vec<Slot> {
    let mut slots: Vec<Slot> = table.iter().cloned().collect();
    slots.sort_by_key(|s| (s.lease.token, s.mode));
    slots
}

#[test]
fn a_table_round_trips() {
    use Mode::{Exclusive as X, Permit as P, Shared as S};
    for (limit, slots) in [
        (3, vec![slot("a", P, 5), slot("b", P, 6)]),
        (0, vec![slot("a", X, 5), slot("a", S, 5)]),
    ] {
        let decoded = decode_table(&mut stream(table_fields(limit, &slots)), 1, BOUNDS).unwrap();
        let mut out = Collect::default();
        encode_table(&decoded, &mut out);
        let again = decode_table(&mut stream(out.0), 1, BOUNDS).unwrap();
        assert_eq!((decoded.limit(), decoded.place), (limit, 7));
        assert_eq!(holders_of(&decoded), slots);
        assert_eq!(holders_of(&again), slots);
    }
}

#[test]
fn every_table_truncation_is_refused() {
    let fields = table_fields(2, &[slot("a", Mode::Permit, 5)]);
    for cut in 0..fields.len() {
        let got = decode_table(&mut stream(fields[..cut].to_vec()), 1, BOUNDS);
        assert!(
            matches!(got, Err(DecodeError::Truncated(_))),
            "cut at {cut}: {got:?}"
        );
    }
}

#[test]
fn holders_that_cannot_coexist_are_refused() {
    use Mode::{Exclusive as X, Permit as P, Shared as S};
    let cases = [
        ("two writers", 0, vec![slot("a", X, 1), slot("b", X, 2)]),
        (
            "a writer and a reader",
            0,
            vec![slot("a", X, 1), slot("b", S, 2)],
        ),
        (
            "a reader and a writer",
            0,
            vec![slot("b", S, 2), slot("a", X, 1)],
        ),
        ("a permit in a lock", 0, vec![slot("a", P, 1)]),
        ("a reader in a semaphore", 2, vec![slot("a", S, 1)]),
        ("over the limit", 1, vec![slot("a", P, 1), slot("b", P, 2)]),
        ("one owner twice", 2, vec![slot("a", P, 1), slot("a", P, 2)]),
    ];
    for (name, limit, slots) in cases {
        let got = decode_table(&mut stream(table_fields(limit, &slots)), 1, BOUNDS);
        assert!(
            matches!(got, Err(DecodeError::Conflict(_))),
            "{name}: {got:?}"
        );
    }
}

#[test]
fn out_of_range_table_fields_are_refused() {
    let good = table_fields(2, &[slot("a", Mode::Permit, 5)]);
    let latest = BOUNDS.latest_deadline_ms;
    // (index of the field, bad value, what must be reported)
    let cases = [
        (
            0,
            Field::U(u64::from(MAX_LIMIT) + 1),
            DecodeError::Limit(10_001),
        ),
        (2, Field::U(0), DecodeError::Count(0)),
        (3, Field::B(Vec::new()), DecodeError::Owner(0)),
        (4, Field::U(3), DecodeError::Mode(3)),
        (5, Field::U(0), DecodeError::Token(0)),
        (6, Field::U(0), DecodeError::Holds(0)),
        (7, Field::U(0), DecodeError::Deadline(0, latest)),
        (
            7,
            Field::U(u64::MAX),
            DecodeError::Deadline(u64::MAX, latest),
        ),
        (7, Field::U(1 << 63), DecodeError::Deadline(1 << 63, latest)),
    ];
    for (at, bad, expected) in cases {
        let mut fields = good.clone();
        fields[at] = bad;
        let got = decode_table(&mut stream(fields), 1, BOUNDS);
        assert_eq!(got.err(), Some(expected), "field {at}");
    }
    let got = decode_table(&mut stream(good), 2, BOUNDS);
    assert_eq!(got.err(), Some(DecodeError::Version(2)));
}
