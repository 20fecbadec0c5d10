//! What a flush or a SWAPDB leaves behind: every observer is answered at once (they waited for
//! their timeout before), a waiter queued on a key whose lock SWAPDB carried away is served by
//! what stands there now (it waited for the carried lock's lease while newcomers got nil), and a
//! flood of refused RESTORE payloads logs a line a second, not a line each.

use std::time::{Duration, Instant};

use crate::common::dump;
use crate::common::observing::observer;
use crate::common::*;

const SOON: Duration = Duration::from_secs(2);

fn observe_then<F: FnOnce(&mut Connection)>(what: &str, act: F) {
    let server = Server::start();
    let mut c = server.conn();
    let token = acquire(&mut c, "lock", "owner", 60_000).expect("granted");
    let after = token.to_string();
    let answer = observer(&server, &["lock", "AFTER", &after, "TIMEOUT", "30000"]);
    let started = Instant::now();
    act(&mut c);
    let (reply, at) = answer
        .recv_timeout(SOON * 2)
        .unwrap_or_else(|_| panic!("{what}: the observer is still blocked after {:?}", SOON * 2));
    assert!(reply.is_ok(), "{what}: {reply:?}");
    assert!(
        at - started < SOON,
        "{what}: answered after {:?}",
        at - started
    );
}

#[test]
fn flushes_and_swapdb_answer_observers_at_once() {
    for (what, args) in [
        ("FLUSHALL", &["FLUSHALL"][..]),
        ("FLUSHALL ASYNC", &["FLUSHALL", "ASYNC"][..]),
        ("FLUSHDB", &["FLUSHDB"][..]),
        ("FLUSHDB ASYNC", &["FLUSHDB", "ASYNC"][..]),
        ("SWAPDB", &["SWAPDB", "0", "1"][..]),
    ] {
        observe_then(what, |c| {
            redis::cmd(args[0]).arg(&args[1..]).exec(c).unwrap();
        });
    }
}

/// A waiter queued on `lock` in db 0; SWAPDB carries the held lock to db 1 (where it is never
/// held again) and brings db 1's empty key: the waiter is granted at once.
#[test]
fn a_waiter_is_served_right_after_swapdb_carries_its_lock_away() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "lock", "holder", 60_000).expect("granted");
    let mut w = server.conn();
    let waiting = std::thread::spawn(move || {
        let started = Instant::now();
        let got: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
            .arg(&["lock", "waiter", "10000", "WAIT", "20000"])
            .query(&mut w)
            .unwrap();
        (got, started.elapsed())
    });
    eventually("the waiter queued", 5_000, || {
        info_field(&mut c, "waiters") == 1
    });
    redis::cmd("SWAPDB").arg(0).arg(1).exec(&mut c).unwrap();
    let (got, waited) = waiting.join().unwrap();
    assert!(got.is_some(), "the waiter was granted");
    assert!(waited < SOON, "granted after {waited:?}");
    assert_eq!(
        status(&mut c, "lock").map(|s| s.0).as_deref(),
        Some("waiter")
    );
}

/// 300 bad payloads in a burst: one line, then none within the second; INFO counts them all.
#[test]
fn refused_restores_are_counted_and_logged_at_most_once_a_second() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "lock", "owner", 60_000).expect("granted");
    let parts = dump::Parts::of(&dump::dump(&mut c, "lock"));
    let token_zero = dump::lock_fields(b"owner", 0, 1, soon_ms(), 1);
    let payload = parts.payload(&parts.header, &token_zero, true);
    let before = info_field(&mut c, "refused_values");
    let started = Instant::now();
    for i in 0..300 {
        let refused = redis::cmd("RESTORE")
            .arg(format!("bad:{i}"))
            .arg(0)
            .arg(payload.as_slice())
            .exec(&mut c);
        assert!(refused.is_err(), "a malformed payload is refused");
    }
    let burst = started.elapsed();
    assert_eq!(info_field(&mut c, "refused_values") - before, 300);
    let lines = server.log().matches("dlock: refusing").count();
    let allowed = 1 + burst.as_secs() as usize;
    assert!(
        lines <= allowed,
        "{lines} lines for 300 refusals in {burst:?}"
    );
    assert!(lines >= 1, "the first refusal is logged");
}
