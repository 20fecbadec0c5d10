//! `DLOCK.PROCLAIM key owner token new-owner`: both owners 1 to 256 bytes and a token in range,
//! or an error.
#![no_main]

use dlock_fuzz::wire::requests;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let argv = dlock_fuzz::arguments(data);
    if let Ok(request) = requests::proclaim(&argv) {
        assert!((1..=256).contains(&request.owner.len()));
        assert!((1..=256).contains(&request.new_owner.len()));
        assert!((1..=i64::MAX as u64).contains(&request.token));
    }
});
