//! Files every earlier release wrote still load as written: the RDB, the plain AOF and the AOF
//! with an RDB preamble in `tests/fixtures/v<release>/` (written by `tests/fixtures/generate.sh`
//! with that release's module, never by a test; README.md there lists what each holds, and
//! [`RELEASES`] what the checks expect of it). Each is copied into a fresh dir, a
//! server with today's module starts on it, and every lock, holder, token, lease end, the gate
//! and the counter must be as the generator wrote them; `DEBUG RELOAD` (today's save, then load)
//! must keep the digest, and a new grant must take a token above all of them. A change to the
//! storage code that breaks old files fails here, before a release ships it.
//!
//! The servers run with `dlock.clock-floor no`: tokens then come from the loaded counter alone,
//! so a counter lost in loading shows as a low token instead of hiding under the wall clock.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::group::{group_status, Holder};
use crate::common::*;

/// The owner the generator gave `fx:reentrant`: a client's 128 hex bits and a round, the form
/// the module packs in memory (and must never write packed).
const HEX_OWNER: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0:1";
/// The counter the generator raised with no lock left to carry it.
const COUNTER: i64 = 7_000;
/// Longest one fixture's check may take: a start, a reload, a few dozen commands.
const LIMIT: Duration = Duration::from_secs(60);

/// How a fixture's files reach the server.
#[derive(Clone, Copy, Debug)]
enum Form {
    Rdb,
    Aof,
}

fn fixtures(release: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(release)
}

/// What one release's fixtures hold: all the same locks, tokens and counter (the generator
/// writes the same state with every release); a gate and its guarded key from 0.3 on.
#[derive(Clone, Copy, Debug)]
struct Release {
    dir: &'static str,
    gates: bool,
}

/// Every release whose files the fixtures keep, oldest first: its directory, whether it had gates.
const RELEASES: [Release; 3] = [
    release("v0.2", false),
    release("v0.3", true),
    release("v0.4", true),
];

const fn release(dir: &'static str, gates: bool) -> Release {
    Release { dir, gates }
}

/// The three forms each release's directory has, and how the server reads them.
const FORMS: [(&str, Form); 3] = [
    ("rdb", Form::Rdb),
    ("aof", Form::Aof),
    ("aof-preamble", Form::Aof),
];

/// One test per release and form (`fixtures_load::v0_2::aof`), each checking the same way.
macro_rules! release_tests {
    ($($name:ident => $index:expr),* $(,)?) => {$(
        mod $name {
            #[test]
            fn rdb() {
                super::check(super::RELEASES[$index], 0);
            }
            #[test]
            fn aof() {
                super::check(super::RELEASES[$index], 1);
            }
            #[test]
            fn aof_preamble() {
                super::check(super::RELEASES[$index], 2);
            }
        }
    )*};
}

release_tests!(v0_2 => 0, v0_3 => 1, v0_4 => 2);

/// Loads `release`'s form number `form` with today's module, within [`LIMIT`].
fn check(release: Release, form: usize) {
    let (name, how) = FORMS[form];
    let what = format!("{}/{name}", release.dir);
    within(LIMIT, &what, move || check_fixture(release, name, how));
}

/// Runs `body` on its own thread and fails if it is not done within `limit`: a server that
/// hangs while loading must fail the test, not stall the suite.
fn within(limit: Duration, what: &str, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => worker.join().expect("finished"),
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the body ended without reporting"),
        },
        Err(RecvTimeoutError::Timeout) => panic!("{what}: not done in {limit:?}"),
    }
}

fn check_fixture(release: Release, name: &str, form: Form) {
    let source = fixtures(release.dir).join(name);
    let leases = lease_window(&fixtures(release.dir));
    let server = start_on_copy(&source, form);
    let mut c = server.conn();
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    assert_as_written(&mut c, release, leases);
    assert_eq!(info_field(&mut c, "refused_values"), 0, "nothing refused");
    let before = digest(&mut c);
    assert_ne!(
        before.trim_start_matches('0'),
        "",
        "an empty dataset's digest"
    );
    redis::cmd("DEBUG")
        .arg("RELOAD")
        .exec(&mut c)
        .expect("DEBUG RELOAD");
    assert_eq!(digest(&mut c), before, "DEBUG RELOAD changed the dataset");
    assert_as_written(&mut c, release, leases);
    let next = acquire(&mut c, "fx:new", "dave", 60_000).expect("a new grant");
    assert!(
        next > COUNTER,
        "new token {next} not above the loaded counter"
    );
    server.assert_no_crash();
}

/// The generator's window of lease ends (unix ms): every lease ends nine years after its grant.
fn lease_window(release_dir: &Path) -> (i64, i64) {
    let path = release_dir.join("leases-end-ms");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ends: Vec<i64> = text
        .split_whitespace()
        .map(|n| n.parse().expect("unix ms"))
        .collect();
    let (first, last) = (ends[0], ends[1]);
    assert!(
        now_ms() < first,
        "the fixtures' leases ended at {first} (unix ms): write new ones with \
         tests/fixtures/generate.sh and retire {}",
        release_dir.display()
    );
    (first, last)
}

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    since.as_millis() as i64
}

/// A server with today's module on a fresh copy of the fixture (the committed files stay as
/// they are: a load may rewrite an AOF's manifest, DEBUG RELOAD writes an RDB).
fn start_on_copy(source: &Path, form: Form) -> Server {
    let dir = tempfile::Builder::new()
        .prefix("dlock-fixture-")
        .tempdir()
        .expect("temp dir");
    copy_tree(source, dir.path());
    let builder = Server::builder()
        .config("dlock.clock-floor", "no")
        .config("enable-debug-command", "yes");
    let builder = match form {
        Form::Rdb => builder.config("dbfilename", "dump.rdb"),
        Form::Aof => builder
            .config("appendonly", "yes")
            .config("appenddirname", "appendonlydir"),
    };
    builder.start_in(dir)
}

fn copy_tree(from: &Path, to: &Path) {
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for entry in entries.flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("create dir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a fixture file");
        }
    }
}

fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query(c)
        .expect("DEBUG DIGEST")
}

/// Every item README.md lists, as the generator wrote it.
fn assert_as_written(c: &mut Connection, release: Release, leases: (i64, i64)) {
    let plain = status(c, "fx:plain").expect("fx:plain is held");
    assert_eq!((plain.0.as_str(), plain.1, plain.3), ("alice", 100, 1));
    assert_lease("fx:plain", plain.2, leases);
    let reentrant = status(c, "fx:reentrant").expect("fx:reentrant is held");
    assert_eq!(
        (reentrant.0.as_str(), reentrant.1, reentrant.3),
        (HEX_OWNER, 101, 2)
    );
    assert_lease("fx:reentrant", reentrant.2, leases);
    let shared = [("reader-1", 102, "shared"), ("reader-2", 103, "shared")];
    assert_group(c, "fx:shared", ("shared", None), &shared, leases);
    let permits = [("job-1", 104, "permit"), ("job-2", 106, "permit")];
    assert_group(c, "fx:semaphore", ("semaphore", Some(3)), &permits, leases);
    let both = [("writer", 105, "exclusive"), ("writer", 105, "shared")];
    assert_group(c, "fx:downgraded", ("shared", None), &both, leases);
    if release.gates {
        assert_gate(c);
    }
    assert_eq!(status(c, "fx:gone"), None, "a released lock stays released");
    let counter = counter(c);
    assert!(counter >= COUNTER, "counter {counter} < {COUNTER}");
    let keys: i64 = redis::cmd("DBSIZE").query(c).expect("DBSIZE");
    let want = if release.gates { 7 } else { 5 };
    assert_eq!(keys, want, "the fixture's keys and no other");
}

/// The gate at 106 and the key written under it.
fn assert_gate(c: &mut Connection) {
    assert_eq!(gate_token(c, "fx:gate"), 106, "the gate's token");
    let data: String = redis::cmd("GET").arg("fx:data").query(c).expect("GET");
    assert_eq!(data, "written under token 106");
}

/// A shared lock's or semaphore's kind, limit and holders (owner, token, mode), any order.
fn assert_group(
    c: &mut Connection,
    key: &str,
    (kind, limit): (&str, Option<i64>),
    want: &[(&str, i64, &str)],
    leases: (i64, i64),
) {
    let (got_kind, got_limit, holders, waiters) =
        group_status(c, key).unwrap_or_else(|| panic!("{key} is held"));
    assert_eq!(
        (got_kind.as_str(), got_limit, waiters),
        (kind, limit, 0),
        "{key}"
    );
    let mut got: Vec<(String, i64, String)> = holders
        .iter()
        .map(|h: &Holder| (h.owner.clone(), h.token, h.mode.clone()))
        .collect();
    got.sort();
    let mut want: Vec<(String, i64, String)> = want
        .iter()
        .map(|&(o, t, m)| (o.to_string(), t, m.to_string()))
        .collect();
    want.sort();
    assert_eq!(got, want, "{key}'s holders");
    for h in &holders {
        assert_eq!(h.holds, 1, "{key}: {}'s holds", h.owner);
        assert_lease(key, h.ttl, leases);
    }
}

/// A lease loaded with `ttl` ms left ends within the generator's window (a second's slack for
/// the ms between reading the clock and the server's reply).
fn assert_lease(what: &str, ttl: i64, (first, last): (i64, i64)) {
    let ends = now_ms() + ttl;
    assert!(
        (first - 1_000..=last + 1_000).contains(&ends),
        "{what}: the lease ends at {ends}, written to end in {first}..={last}"
    );
}
