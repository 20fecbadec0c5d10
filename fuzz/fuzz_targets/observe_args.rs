//! `DLOCK.OBSERVE key [AFTER token] [OWNER owner] [TIMEOUT ms]`: any argument list parses to a
//! request within the documented bounds, or to an error.
#![no_main]

use dlock_fuzz::wire::requests;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let argv = dlock_fuzz::arguments(data);
    if let Ok(request) = requests::observe(&argv) {
        assert!(request.timeout_ms <= 86_400_000);
        if let Some((token, owner)) = request.after {
            assert!(token <= i64::MAX as u64);
            assert!(owner.is_none_or(|o| o.len() <= 256));
        }
    }
});
