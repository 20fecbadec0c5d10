use proptest::prelude::*;

use super::*;

fn words(text: &str) -> Vec<&[u8]> {
    text.split(' ').map(str::as_bytes).collect()
}

#[test]
fn a_guard_takes_a_gate_a_token_and_a_command() {
    assert_eq!(guard(&words("DLOCK.GUARD g 42 SET k v")).unwrap(), 42);
    assert!(guard(&words("DLOCK.GUARD g 0 SET")).is_err());
    assert!(guard(&words("DLOCK.GUARD g 1")).is_err());
}

#[test]
fn nested_dlock_commands_and_nested_asks_are_not_asked() {
    assert!(asks_wrapped_keys(&words("DLOCK.GUARD g 1 SET k v"), false));
    assert!(!asks_wrapped_keys(
        &words("DLOCK.GUARD g 1 dlock.guard g 1 SET k v"),
        false
    ));
    assert!(!asks_wrapped_keys(&words("DLOCK.GUARD g 1 SET k v"), true));
    assert!(!asks_wrapped_keys(&words("DLOCK.GUARD g 1"), false));
}

#[test]
fn declared_keys_shift_past_the_gate_and_stay_inside_the_arguments() {
    let keys: Vec<_> = declared(&[(1, 8), (3, 4), (usize::MAX, 1), (9, 1)], 8).collect();
    assert_eq!(keys, [(4, 8), (6, 4)]);
}

#[test]
fn only_an_argument_after_the_command_name_spells_the_gate() {
    assert!(spells_gate(&words("DLOCK.GUARD g 1 DEL g")));
    assert!(!spells_gate(&words("DLOCK.GUARD g 1 g x")));
    assert!(!spells_gate(&words("DLOCK.GUARD g 1 SET k v")));
}

#[test]
fn observe_options_depend_on_each_other() {
    let argv = words("DLOCK.OBSERVE k");
    let at_once = observe(&argv).unwrap();
    assert!(at_once.after.is_none() && at_once.timeout_ms == 0);
    let argv = words("DLOCK.OBSERVE k after 7 OWNER o TIMEOUT 5");
    let after = observe(&argv).unwrap();
    assert_eq!(after.after, Some((7, Some(&b"o"[..]))));
    assert_eq!(after.timeout_ms, 5);
    for bad in [
        "k OWNER o",
        "k AFTER",
        "k AFTER -1",
        "k TIMEOUT 86400001",
        "k AFTER 1 AFTER 2",
    ] {
        assert!(
            observe(&words(&format!("DLOCK.OBSERVE {bad}"))).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn proclaim_takes_two_owners_and_a_token() {
    let argv = words("DLOCK.PROCLAIM k old 9 new");
    let parsed = proclaim(&argv).unwrap();
    assert_eq!(
        (parsed.owner, parsed.token, parsed.new_owner),
        (&b"old"[..], 9, &b"new"[..])
    );
    assert!(proclaim(&words("DLOCK.PROCLAIM k old 9")).is_err());
    assert!(proclaim(&["DLOCK.PROCLAIM", "k", "", "9", "new"].map(str::as_bytes)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Any arguments at all: an answer, never a panic, and what is declared stays in bounds.
    #[test]
    fn any_bytes_parse_without_panicking(
        argv in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..10),
        wrapped in prop::collection::vec((any::<usize>(), any::<i32>()), 0..6),
        asking in any::<bool>(),
    ) {
        let _ = guard(&argv);
        let _ = observe(&argv);
        let _ = proclaim(&argv);
        let _ = spells_gate(&argv);
        if asks_wrapped_keys(&argv, asking) {
            prop_assert!(!asking && argv.len() > WRAPPED_AT);
        }
        prop_assert!(declared(&wrapped, argv.len()).all(|(at, _)| at < argv.len() && at >= WRAPPED_AT));
    }
}
