//! Lock keys are ordinary keys, and generic key commands reach them. None may make a lock
//! outlive its deadline, or report a lock held under a key with a token smaller than one
//! already issued for that key. Also: a refused ACQUIRE leaves WATCH intact, DEBUG DIGEST tells
//! locks apart, a server that never issued a token can drop the module, and the ACL recipe for
//! application users works.

use crate::common::*;

use std::thread::sleep;
use std::time::Duration;

fn run(c: &mut Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    cmd.arg(&args[1..]);
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn persist_and_pexpire_cannot_stretch_a_lock_past_its_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    let first = acquire(&mut c, "persisted", "a", 300).unwrap();
    acquire(&mut c, "stretched", "a", 300).unwrap();
    run(&mut c, &["PERSIST", "persisted"]);
    run(&mut c, &["PEXPIRE", "stretched", "600000"]);
    sleep(Duration::from_millis(400));
    for key in ["persisted", "stretched"] {
        assert_eq!(status(&mut c, key), None, "{key}: free after its deadline");
        let next = acquire(&mut c, key, "b", 60_000).expect("another owner gets it");
        assert!(next > first);
        assert!(
            pttl(&mut c, key) > 50_000,
            "{key}: the new grant sets its own TTL"
        );
    }
    // Untouched, the stretched keys still go once their locks end: the sweep pulls them back
    // (tests/key_ttl.rs checks the TTL it sets).
    run(&mut c, &["DLOCK.RELEASE", "persisted", "b"]);
    run(&mut c, &["DLOCK.RELEASE", "stretched", "b"]);
    acquire(&mut c, "persisted-again", "a", 300).unwrap();
    run(&mut c, &["PERSIST", "persisted-again"]);
    eventually("the persisted key expired with its lock", 2_500, || {
        redis::cmd("EXISTS")
            .arg("persisted-again")
            .query::<i64>(&mut c)
            .unwrap()
            == 0
    });
}

#[test]
fn a_renamed_lock_is_never_held_under_its_new_name_or_again_under_its_old_one() {
    let server = Server::start();
    let mut c = server.conn();
    let older = acquire(&mut c, "lock:a", "a", 60_000).unwrap();
    let newer = acquire(&mut c, "lock:c", "c", 60_000).unwrap();
    assert_eq!(release(&mut c, "lock:c", "c"), 1);
    run(&mut c, &["RENAME", "lock:a", "lock:c"]);
    assert_eq!(
        status(&mut c, "lock:c"),
        None,
        "token {older} was issued for lock:a, and lock:c already had {newer}"
    );
    assert_eq!(release(&mut c, "lock:c", "a"), 0);
    run(&mut c, &["RENAME", "lock:c", "lock:a"]);
    assert_eq!(
        status(&mut c, "lock:a"),
        None,
        "moving it back does not revive it"
    );
    let next = acquire(&mut c, "lock:a", "d", 60_000).unwrap();
    assert!(next > newer, "a fresh grant: {next} > {newer}");
}

#[test]
fn move_swapdb_and_restore_under_another_name_leave_no_lock_held() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "moved", "a", 60_000).unwrap();
    acquire(&mut c, "swapped", "a", 60_000).unwrap();
    acquire(&mut c, "dumped", "a", 60_000).unwrap();
    let payload = crate::common::dump::dump(&mut c, "dumped");
    assert_eq!(
        crate::common::dump::restore(&mut c, "elsewhere", &payload),
        None
    );
    assert_eq!(
        status(&mut c, "elsewhere"),
        None,
        "RESTORE under another name"
    );
    assert_eq!(
        status(&mut c, "dumped").unwrap().0,
        "a",
        "the original stays held"
    );

    run(&mut c, &["MOVE", "moved", "1"]);
    run(&mut c, &["SWAPDB", "0", "2"]);
    for db in ["1", "2"] {
        run(&mut c, &["SELECT", db]);
        assert_eq!(status(&mut c, "moved"), None, "db {db}");
        assert_eq!(status(&mut c, "swapped"), None, "db {db}");
    }
    run(&mut c, &["SWAPDB", "0", "2"]);
    run(&mut c, &["SELECT", "1"]);
    run(&mut c, &["MOVE", "moved", "0"]);
    run(&mut c, &["SELECT", "0"]);
    assert_eq!(status(&mut c, "moved"), None, "moved back: not revived");
    assert_eq!(status(&mut c, "swapped"), None, "swapped back: not revived");
    assert_eq!(
        status(&mut c, "dumped"),
        None,
        "it was in the swapped database too"
    );
}

#[test]
fn copy_of_a_lock_is_refused() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "k", "a", 60_000).unwrap();
    let error = error_of(&mut c, &["COPY", "k", "k2"]);
    assert!(error.contains("not supported"), "{error}");
    assert_eq!(status(&mut c, "k2"), None);
}

#[test]
fn a_refused_acquire_leaves_watch_intact_and_a_grant_invalidates_it() {
    let server = Server::start();
    let (mut holder, mut watcher, mut other) = (server.conn(), server.conn(), server.conn());
    acquire(&mut holder, "k", "a", 60_000).unwrap();
    run(&mut watcher, &["WATCH", "k"]);
    assert_eq!(acquire(&mut other, "k", "b", 60_000), None);
    assert_eq!(release(&mut other, "k", "b"), 0);
    assert_eq!(extend(&mut other, "k", "b", 1_000), 0);
    run(&mut watcher, &["MULTI"]);
    run(&mut watcher, &["SET", "x", "1"]);
    assert_ne!(
        run(&mut watcher, &["EXEC"]),
        Value::Nil,
        "nothing changed k: EXEC runs"
    );

    run(&mut watcher, &["WATCH", "k"]);
    assert_eq!(release(&mut holder, "k", "a"), 1);
    run(&mut watcher, &["MULTI"]);
    run(&mut watcher, &["SET", "x", "2"]);
    assert_eq!(
        run(&mut watcher, &["EXEC"]),
        Value::Nil,
        "a release changed k: EXEC aborts"
    );
}

#[test]
fn debug_digest_tells_locks_apart() {
    let server = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let mut c = server.conn();
    acquire(&mut c, "a", "alice", 60_000).unwrap();
    acquire(&mut c, "b", "bob", 60_000).unwrap();
    let digest = |c: &mut Connection, key: &str| -> String {
        let v: Vec<String> = redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg(key)
            .query(c)
            .unwrap();
        v[0].clone()
    };
    let (a, b) = (digest(&mut c, "a"), digest(&mut c, "b"));
    assert_ne!(a, b);
    assert_ne!(a, "0".repeat(40), "a real digest");
    acquire_reentrant(&mut c, "a", "alice", 60_000).unwrap();
    assert_ne!(digest(&mut c, "a"), a, "the hold count is part of it");
    let whole: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut c).unwrap();
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    let reloaded: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut c).unwrap();
    assert_eq!(whole, reloaded, "a reload changes nothing");
}

#[test]
fn a_server_that_never_issued_a_token_can_drop_the_module() {
    let server = Server::builder().config("dbfilename", "dump.rdb").start();
    let mut c = server.conn();
    if dlock_testkit::server_version(&mut c) < (7, 2) {
        eprintln!("skipped: before Redis 7.2 every RDB carries module aux data (no aux_save2)");
        return;
    }
    run(&mut c, &["SET", "plain", "1"]);
    run(&mut c, &["SAVE"]);
    let dir = server.into_dir();
    let plain = Server::builder()
        .without_module()
        .config("dbfilename", "dump.rdb")
        .start_in(dir);
    let value: String = redis::cmd("GET")
        .arg("plain")
        .query(&mut plain.conn())
        .unwrap();
    assert_eq!(value, "1", "the RDB loaded without the module");
}

/// The recipe in README "ACL": application users run DLOCK commands on lock keys only, keep
/// full access to their own keys, and cannot touch lock keys with generic commands.
#[test]
fn the_acl_recipe_for_application_users() {
    let server = Server::start();
    let mut admin = server.conn();
    let recipe = "on >secret resetkeys ~app:* +@all -@dangerous -dlock.apply -dlock.raise -dlock.forcerelease \
                  (~lock:* -@all +dlock.acquire +dlock.release +dlock.extend +dlock.fence +dlock.status +dlock.counter)";
    let mut setuser = redis::cmd("ACL");
    setuser
        .arg("SETUSER")
        .arg("app")
        .arg(recipe.split_whitespace().collect::<Vec<_>>());
    setuser.exec(&mut admin).unwrap();
    let mut app = redis::Client::open(format!("redis://app:secret@127.0.0.1:{}/", server.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    acquire(&mut app, "lock:1", "o", 60_000).unwrap();
    for allowed in [
        &["DLOCK.STATUS", "lock:1"][..],
        &["DLOCK.EXTEND", "lock:1", "o", "60000"],
        &["DLOCK.COUNTER"],
        &["DLOCK.RUNID"],
        &["SET", "app:data", "1"],
        &["GET", "app:data"],
    ] {
        run(&mut app, allowed);
    }
    for denied in [
        &["DEL", "lock:1"][..],
        &["PERSIST", "lock:1"],
        &["PEXPIRE", "lock:1", "1"],
        &["RENAME", "lock:1", "app:x"],
        &["GET", "lock:1"],
        &["DLOCK.FORCERELEASE", "lock:1"],
        &["DLOCK.RAISE", "5"],
        &["DLOCK.APPLY", "lock:1", "o", "5", "1"],
        &["FLUSHALL"],
    ] {
        let error = error_of(&mut app, denied);
        assert!(
            error.starts_with("NOPERM") || error.starts_with("ERR unknown command"),
            "{denied:?}: {error}"
        );
    }
    assert_eq!(release(&mut app, "lock:1", "o"), 1);
}
