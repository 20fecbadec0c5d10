//! `DLOCK.RUNID`: the server's run id, the one `INFO server` shows, which clients read on each
//! new connection to tell servers apart. It is an application command (@dlock on 7.2+), so a
//! least-privilege ACL user reads it without INFO (@dangerous).

use crate::common::*;

use std::time::Duration;

fn run_id(c: &mut Connection) -> String {
    redis::cmd("DLOCK.RUNID").query(c).expect("DLOCK.RUNID")
}

fn info_run_id(c: &mut Connection) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(c)
        .expect("INFO server");
    let id = info.lines().find_map(|l| l.strip_prefix("run_id:"));
    id.expect("run_id in INFO server").trim().to_string()
}

/// A connection that gives up rather than hang the test.
fn bounded(server: &Server) -> Connection {
    let c = server.conn();
    c.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    c
}

#[test]
fn it_is_info_servers_run_id_the_same_on_every_call_and_new_after_a_restart() {
    let mut server = Server::start();
    let mut c = bounded(&server);
    let first = run_id(&mut c);
    assert_eq!(first.len(), 40, "{first}");
    assert_eq!(first, info_run_id(&mut c));
    assert_eq!(run_id(&mut c), first, "read again: the same");
    server.restart();
    let mut c = bounded(&server);
    let again = run_id(&mut c);
    assert_ne!(again, first, "a new process, a new run id");
    assert_eq!(again, info_run_id(&mut c));
    assert_eq!(
        error_of(&mut c, &["DLOCK.RUNID", "x"]),
        "ERR wrong number of arguments for 'dlock.runid' command"
    );
}

#[test]
fn a_user_with_only_the_dlock_commands_reads_it_without_info() {
    let server = Server::start();
    let mut c = bounded(&server);
    let id = run_id(&mut c);
    // 7.2+ files it under @dlock; 7.0 has no module categories, so the recipe names it.
    let grant = match dlock_testkit::server_version(&mut c) < (7, 2) {
        true => "+dlock.runid",
        false => "+@dlock",
    };
    redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~lock:*", "-@all", grant])
        .exec(&mut c)
        .expect("ACL SETUSER");
    let app = redis::Client::open(format!("redis://app:pw@127.0.0.1:{}/", server.port()))
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(5)));
    let mut app = app.expect("the app user connects");
    app.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    assert_eq!(run_id(&mut app), id);
    let refused = error_of(&mut app, &["INFO", "server"]);
    assert!(refused.starts_with("NOPERM"), "{refused}");
}
