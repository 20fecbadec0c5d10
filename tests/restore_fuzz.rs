//! RESTORE fuzzing against a real server: DUMP payloads of real locks, mutated (bit flips,
//! interesting bytes, truncation, insertion, oversized lengths) and re-sealed with a valid
//! checksum so that they reach the module's loader. The server must survive every one, and
//! whatever it accepted must work with every DLOCK command and survive DEBUG RELOAD.

use crate::common::dump::{self, Parts};
use crate::common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Mutated payloads sent per run (recorded in docs/safety.md).
const INPUTS: usize = 20_000;
const INTERESTING: [u8; 10] = [0x00, 0x01, 0x02, 0x05, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xFF];

fn mutate(rng: &mut StdRng, base: &[u8]) -> Vec<u8> {
    let n = base.len();
    // Body only (the version and checksum are recomputed); the header rarely, so that most
    // inputs reach the module's own loader rather than Redis's type dispatch.
    let mut body = base[..n - 10].to_vec();
    let version = [base[n - 10], base[n - 9]];
    let first = if rng.random_ratio(1, 20) { 0 } else { 10 };
    for _ in 0..rng.random_range(1..=4) {
        if body.len() <= first {
            break;
        }
        let at = rng.random_range(first..body.len());
        match rng.random_range(0..6) {
            0 => body[at] ^= 1 << rng.random_range(0..8),
            1 => body[at] = INTERESTING[rng.random_range(0..INTERESTING.len())],
            2 => body.truncate(at),
            3 => {
                let extra: Vec<u8> = (0..rng.random_range(1..9)).map(|_| rng.random()).collect();
                body.splice(at..at, extra);
            }
            4 => {
                body.splice(at..at, dump::len(rng.random_range(1u64 << 32..u64::MAX)));
            }
            _ => {
                let end = rng.random_range(at..body.len());
                let copy = body[at..end].to_vec();
                body.splice(at..at, copy);
            }
        }
    }
    dump::seal(body, version)
}

#[test]
fn mutated_dump_payloads_never_take_the_server_down() {
    let server = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let mut c = server.conn();
    acquire(&mut c, "base:short", "o", 60_000).unwrap();
    acquire(&mut c, "base:long", &"owner-".repeat(40), 60_000).unwrap();
    acquire_reentrant(&mut c, "base:holds", "re", 60_000).unwrap();
    acquire_reentrant(&mut c, "base:holds", "re", 60_000).unwrap();
    let bases: Vec<Vec<u8>> = ["base:short", "base:long", "base:holds"]
        .iter()
        .map(|k| dump::dump(&mut c, k))
        .collect();
    Parts::of(&bases[0]); // a module value, as expected
    let seed = rand::random::<u64>();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut accepted = 0;
    for i in 0..INPUTS {
        let payload = mutate(&mut rng, &bases[i % bases.len()]);
        if dump::restore(&mut c, &format!("fuzz:{}", i % 64), &payload).is_none() {
            accepted += 1;
        }
        if i % 1_000 == 0 {
            let pong: String = redis::cmd("PING")
                .query(&mut c)
                .unwrap_or_else(|e| panic!("seed {seed}, input {i}: {e}"));
            assert_eq!(pong, "PONG");
        }
    }
    // Whatever was accepted is usable and survives a save and load.
    for i in 0..64 {
        let key = format!("fuzz:{i}");
        for args in [
            vec!["DLOCK.STATUS", &key],
            vec!["DLOCK.ACQUIRE", &key, "x", "1000"],
            vec!["DLOCK.RELEASE", &key, "x"],
        ] {
            let mut cmd = redis::cmd(args[0]);
            cmd.arg(&args[1..]);
            let _ = cmd.query::<Value>(&mut c); // WRONGTYPE for mutated types is fine
        }
    }
    redis::cmd("DEBUG")
        .arg("RELOAD")
        .exec(&mut c)
        .unwrap_or_else(|e| panic!("seed {seed}: reload: {e}"));
    server.assert_no_crash();
    eprintln!(
        "restore fuzz: {INPUTS} mutated payloads (seed {seed}), {accepted} accepted, server alive"
    );
}
