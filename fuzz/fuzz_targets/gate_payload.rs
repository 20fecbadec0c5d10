//! A gate's RDB fields (as a DUMP body holds them, after the header): any bytes decode to a gate
//! whose token is in range, or to an error; a decoded gate encodes back to what was read.
#![no_main]

use dlock_fuzz::keyspace::fields::{Payload, Sink};
use dlock_fuzz::keyspace::gate_codec::{decode, encode, ENCODING_VERSION};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Numbers(Vec<u64>);

impl Sink for Numbers {
    fn unsigned(&mut self, value: u64) {
        self.0.push(value);
    }
    fn bytes(&mut self, _: &[u8]) {
        panic!("a gate has no string field");
    }
}

fuzz_target!(|data: &[u8]| {
    let version = i32::from(data.first().copied().unwrap_or(1) % 3);
    let Ok(gate) = decode(&mut Payload(data.get(1..).unwrap_or_default()), version) else {
        return;
    };
    assert_eq!(version, ENCODING_VERSION);
    assert!((1..=i64::MAX as u64).contains(&gate.token));
    let mut written = Numbers::default();
    encode(&gate, &mut written);
    assert_eq!(written.0, [gate.token, gate.place]);
});
