//! A file a newer dlock wrote, with an encoding this module does not know, is refused, never
//! misread: the server stops loading with the module's log line naming the data type and the
//! version, and exits (no signal, no crash report; Redis 7.0 then runs its redis-check-rdb on the
//! file, which skips module values, finds it well formed and exits 0, so the status is not
//! checked beyond that). For each module type (`dlocklock`,
//! `dlockmany`, `dlockgate`) and the node counter (the aux data of `dlocklock`), an RDB of
//! today's module is saved with `rdbchecksum no` (a zero checksum, which Redis does not check)
//! and the type's encoding version in it is raised by one: Redis stores each module value, and
//! the aux data, after the type's 64-bit id, whose low 10 bits are the encoding version
//! (`moduleTypeEncodeId` in Redis's module.c).

use std::path::Path;
use std::time::Duration;

use crate::common::*;

/// The characters of a module type name, in the order Redis numbers them.
const NAME_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// One file to make and refuse: the type whose encoding is raised, the one it has today, how
/// many values of that type's id the file holds (the last is raised: the aux data comes before
/// the keys), the commands that make it, and the log line's words.
struct Case {
    type_name: &'static str,
    encver: u64,
    ids: usize,
    commands: &'static [&'static [&'static str]],
    refused: &'static str,
}

const CASES: [Case; 4] = [
    Case {
        type_name: "dlocklock",
        encver: 2,
        ids: 2,
        commands: &[&["DLOCK.ACQUIRE", "nw:lock", "alice", "60000"]],
        refused: "dlock: refusing a lock value (dlocklock): unknown encoding version 3",
    },
    Case {
        type_name: "dlockmany",
        encver: 1,
        ids: 1,
        commands: &[&["DLOCK.ACQUIRE", "nw:shared", "reader", "60000", "SHARED"]],
        refused: "dlock: refusing a shared lock or semaphore value (dlockmany): unknown encoding version 2",
    },
    Case {
        type_name: "dlockgate",
        encver: 1,
        ids: 1,
        commands: &[&["DLOCK.GUARD", "nw:gate", "5", "SET", "nw:data", "x"]],
        refused: "dlock: refusing a gate (dlockgate): unknown encoding version 2",
    },
    Case {
        type_name: "dlocklock",
        encver: 2,
        ids: 1,
        commands: &[
            &["DLOCK.ACQUIRE", "nw:gone", "alice", "60000"],
            &["DLOCK.RELEASE", "nw:gone", "alice"],
        ],
        refused: "dlock: refusing the saved fencing counter (dlocklock aux data): unknown \
                  encoding version 3",
    },
];

#[test]
fn newer_lock_encoding_is_refused() {
    refused(&CASES[0]);
}

#[test]
fn newer_table_encoding_is_refused() {
    refused(&CASES[1]);
}

#[test]
fn newer_gate_encoding_is_refused() {
    refused(&CASES[2]);
}

#[test]
fn newer_counter_encoding_is_refused() {
    refused(&CASES[3]);
}

fn refused(case: &Case) {
    let dir = saved(case);
    raise_encoding(&dir.path().join("dump.rdb"), case);
    let mut server = Server::builder()
        .config("dbfilename", "dump.rdb")
        .start_in_failing(dir);
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("the server exited");
    let log = server.log();
    assert!(
        status.code().is_some(),
        "killed by a signal: {status:?}:\n{log}"
    );
    assert!(
        log.contains(case.refused),
        "no {:?} in:\n{log}",
        case.refused
    );
    server.assert_no_crash();
}

/// A data dir with `case`'s commands saved in an RDB without a checksum.
fn saved(case: &Case) -> tempfile::TempDir {
    let server = Server::builder()
        .config("dbfilename", "dump.rdb")
        .config("rdbchecksum", "no")
        .start();
    let mut c = server.conn();
    for command in case.commands {
        let mut cmd = redis::cmd(command[0]);
        cmd.arg(&command[1..]);
        let _: Value = cmd
            .query(&mut c)
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    }
    redis::cmd("SAVE").exec(&mut c).expect("SAVE");
    server.into_dir()
}

/// Raises the encoding version of the last value of `case`'s type in the RDB at `path`.
fn raise_encoding(path: &Path, case: &Case) {
    let mut bytes = std::fs::read(path).expect("read the RDB");
    // An RDB length of 64 bits: 0x81, then the id big-endian.
    let mut stored = vec![0x81];
    stored.extend_from_slice(&type_id(case.type_name, case.encver).to_be_bytes());
    let at: Vec<usize> = bytes
        .windows(stored.len())
        .enumerate()
        .filter(|(_, w)| *w == stored.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), case.ids, "{}'s ids in the RDB", case.type_name);
    let raised = type_id(case.type_name, case.encver + 1).to_be_bytes();
    let last = at[at.len() - 1];
    bytes[last + 1..last + 9].copy_from_slice(&raised);
    std::fs::write(path, bytes).expect("write the RDB");
}

/// A module type's 64-bit id: its nine name characters, 6 bits each, then 10 bits of version.
fn type_id(name: &str, encver: u64) -> u64 {
    let name_bits = name.bytes().fold(0u64, |id, b| {
        let index = NAME_CHARS
            .iter()
            .position(|&c| c == b)
            .expect("a name char");
        (id << 6) | index as u64
    });
    (name_bits << 10) | encver
}

/// An AOF effect a newer module might write (`DLOCK.APPLY` with a word this one does not know)
/// is refused, not misread: the command fails while the AOF loads, Redis logs its error on a
/// `== CRITICAL ==` line, and loading goes on without it (Redis does not stop on a command's
/// error in an AOF), so the key it would have written is absent and the rest is kept.
#[test]
fn newer_aof_effect_is_refused_not_misread() {
    let builder = || {
        Server::builder()
            .config("appendonly", "yes")
            .config("appenddirname", "appendonlydir")
            .config("appendfsync", "always")
    };
    let server = builder().start();
    let mut c = server.conn();
    let kept = acquire(&mut c, "nw:kept", "alice", 600_000).expect("granted");
    let dir = server.into_dir();
    let deadline = soon_ms() + 600_000;
    let effect = format!("DLOCK.APPLY nw:newer bob 5 1 PXAT {deadline} FUTURE");
    append_to_aof(dir.path(), &effect);
    let server = builder().start_in(dir);
    let mut c = server.conn();
    assert_eq!(
        status(&mut c, "nw:newer"),
        None,
        "the unknown effect applied"
    );
    assert_eq!(
        status(&mut c, "nw:kept").map(|s| s.1),
        Some(kept),
        "nw:kept"
    );
    let log = server.log();
    assert!(
        log.contains("unknown option 'FUTURE'"),
        "no error logged:\n{log}"
    );
    server.assert_no_crash();
}

/// Appends `command` (words separated by spaces) to the incr file of the AOF in `dir`, as Redis
/// writes a command there.
fn append_to_aof(dir: &Path, command: &str) {
    let incr = std::fs::read_dir(dir.join("appendonlydir"))
        .expect("the AOF dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .expect("an incr file");
    let words: Vec<&str> = command.split(' ').collect();
    let mut text = format!("*{}\r\n", words.len());
    for word in words {
        text.push_str(&format!("${}\r\n{word}\r\n", word.len()));
    }
    let mut aof = std::fs::OpenOptions::new()
        .append(true)
        .open(&incr)
        .expect("open the incr file");
    std::io::Write::write_all(&mut aof, text.as_bytes()).expect("append the effect");
}
