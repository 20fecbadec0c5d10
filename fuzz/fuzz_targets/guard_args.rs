//! `DLOCK.GUARD gate token command [arg ...]`: the arguments and the key extraction, for any
//! argument list and any key positions Redis could report for the wrapped command.
#![no_main]

use dlock_fuzz::wire::requests::{self, WRAPPED_AT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (positions, rest) = data.split_at(data.len().min(8));
    let argv = dlock_fuzz::arguments(rest);
    let _ = requests::guard(&argv);
    let _ = requests::spells_gate(&argv);
    for asking in [false, true] {
        if requests::asks_wrapped_keys(&argv, asking) {
            assert!(!asking && argv.len() > WRAPPED_AT);
            assert!(!requests::is_dlock_command(argv[WRAPPED_AT]));
        }
    }
    let wrapped: Vec<(usize, i32)> = positions
        .iter()
        .map(|&p| (usize::from(p), i32::from(p)))
        .collect();
    for (at, _) in requests::declared(&wrapped, argv.len()) {
        assert!((WRAPPED_AT..argv.len()).contains(&at));
    }
});
