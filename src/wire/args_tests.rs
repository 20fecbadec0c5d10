use proptest::prelude::*;

use super::*;

#[test]
fn observe_takes_a_token_from_zero_and_a_timeout_up_to_a_day() {
    assert_eq!(observe_after(b"0").ok(), Some(0), "no holder seen");
    assert_eq!(observe_after(b"9223372036854775807").ok(), Some(MAX_TOKEN));
    for bad in ["", "-1", "abc", "01", "1.5", "9223372036854775808"] {
        assert!(observe_after(bad.as_bytes()).is_err(), "{bad:?}");
    }
    assert_eq!(observe_timeout_ms(b"0").ok(), Some(0), "no limit");
    assert_eq!(observe_timeout_ms(b"86400000").ok(), Some(86_400_000));
    for bad in ["-5", "86400001", "99999999999", "1.5", "x"] {
        assert!(observe_timeout_ms(bad.as_bytes()).is_err(), "{bad:?}");
    }
}

#[test]
fn top_takes_scan_cursors_and_a_bounded_count() {
    assert_eq!(cursor(b"0").ok(), Some(0));
    assert_eq!(cursor(b"18446744073709551615").ok(), Some(u64::MAX));
    for bad in ["", "-1", "01", "1.0", " 1", "18446744073709551616", "x"] {
        assert!(cursor(bad.as_bytes()).is_err(), "{bad:?}");
    }
    assert_eq!(top_count(b"1").ok(), Some(1));
    assert_eq!(top_count(b"10000").ok(), Some(TOP_MAX_COUNT));
    for bad in ["0", "10001", "-5", "ten"] {
        assert!(top_count(bad.as_bytes()).is_err(), "{bad:?}");
    }
}

#[test]
fn integers_are_parsed_exactly_as_redis_does() {
    let ok: &[(&str, i64)] = &[
        ("0", 0),
        ("1", 1),
        ("-1", -1),
        ("9223372036854775807", i64::MAX),
        ("-9223372036854775808", i64::MIN),
    ];
    for &(text, value) in ok {
        assert_eq!(integer(text.as_bytes()), Some(value), "{text}");
    }
    let bad = [
        "",
        "-",
        "+1",
        " 1",
        "1 ",
        "01",
        "-0",
        "00",
        "1.5",
        "1e3",
        "9223372036854775808",
        "-9223372036854775809",
        "0x10",
        "١",
    ];
    for text in bad {
        assert_eq!(integer(text.as_bytes()), None, "{text:?}");
    }
}

#[test]
fn ranges_are_checked_with_the_argument_named() {
    assert_eq!(ttl_ms(b"10", 100, "ttl-ms").unwrap(), 10);
    for bad in ["0", "101", "-5", "x"] {
        let e = ttl_ms(bad.as_bytes(), 100, "PX").unwrap_err().to_string();
        assert!(
            e.starts_with("ERR PX must be an integer from 1 to 100"),
            "{e}"
        );
    }
    assert!(token(b"0").is_err() && token(b"9223372036854775807").is_ok());
    assert!(holds(b"65536").is_err() && holds(b"65535").is_ok());
    assert!(owner(b"").is_err() && owner(&[b'x'; 257]).is_err() && owner(&[0; 256]).is_ok());
}

const SPECS: [OptionSpec; 3] = [
    OptionSpec {
        name: "REENTRANT",
        takes_value: false,
    },
    OptionSpec {
        name: "WAIT",
        takes_value: true,
    },
    OptionSpec {
        name: "TICKET",
        takes_value: true,
    },
];

fn parse<'a>(words: &[&'a str]) -> Result<[Option<Option<&'a [u8]>>; 3], String> {
    options(words.iter().map(|w| w.as_bytes()), &SPECS).map_err(|e| e.to_string())
}

#[test]
fn options_in_any_order_and_case() {
    let found = parse(&["ticket", "7", "REENTRANT", "Wait", "100"]).unwrap();
    assert_eq!(
        found,
        [Some(None), Some(Some(&b"100"[..])), Some(Some(&b"7"[..]))]
    );
    assert_eq!(parse(&[]).unwrap(), [None, None, None]);
}

#[test]
fn bad_options_name_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["FOO"],
            "ERR unknown option 'FOO', allowed: REENTRANT WAIT TICKET",
        ),
        (&["WAIT"], "ERR option WAIT needs a value"),
        (
            &["REENTRANT", "REENTRANT"],
            "ERR option REENTRANT given more than once",
        ),
        (
            &["WAIT", "1", "wait", "2"],
            "ERR option WAIT given more than once",
        ),
    ];
    for (words, expected) in cases {
        assert_eq!(parse(words).unwrap_err(), *expected);
    }
}

/// Inputs tried by the argument-parser fuzz harness (recorded in docs/safety.md).
pub const FUZZ_CASES: u32 = 50_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: FUZZ_CASES, ..ProptestConfig::default() })]

    /// Any bytes: never a panic; an accepted integer prints back to the same bytes.
    #[test]
    fn integer_parsing_is_exact(bytes in proptest::collection::vec(prop_oneof![Just(b'-'), Just(b'0'), b'0'..=b'9', any::<u8>()], 0..22)) {
        if let Some(value) = integer(&bytes) {
            let printed = value.to_string();
            prop_assert_eq!(printed.as_bytes(), &bytes[..]);
        }
    }

    /// Any bytes: never a panic; an accepted cursor prints back to the same bytes.
    #[test]
    fn cursor_parsing_is_exact(bytes in proptest::collection::vec(prop_oneof![Just(b'0'), b'0'..=b'9', any::<u8>()], 0..22)) {
        if let Ok(value) = cursor(&bytes) {
            let printed = value.to_string();
            prop_assert_eq!(printed.as_bytes(), &bytes[..]);
        }
    }

    /// Any option words: never a panic, and what is accepted has each option at most once.
    #[test]
    fn option_parsing_never_panics(words in proptest::collection::vec(prop_oneof![
        Just(b"WAIT".to_vec()), Just(b"ticket".to_vec()), Just(b"REENTRANT".to_vec()), proptest::collection::vec(any::<u8>(), 0..6)
    ], 0..7)) {
        let _ = options(words.iter().map(Vec::as_slice), &SPECS);
    }
}
