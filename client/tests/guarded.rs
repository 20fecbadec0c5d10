//! Guarded writes from the Rust client: a holder that stalls past its lease finds its write
//! refused at the data's gate, the newer holder's write standing, and its lock marked lost.
//! (The same with real SIGSTOPped processes: python/tests/test_guarded.py.)

use crate::common::*;

use std::future::Future;
use std::time::Duration;

use dlock_client::Error;

/// Every test here is bounded: a hang fails it.
async fn bounded(test: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the test finished within 60 s");
}

async fn data(server: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("the data's server answers")
}

fn set(value: &str) -> redis::Cmd {
    redis::cmd("SET").arg("report").arg(value).clone()
}

async fn get(conn: &mut redis::aio::MultiplexedConnection) -> Option<String> {
    redis::cmd("GET")
        .arg("report")
        .query_async(conn)
        .await
        .expect("GET")
}

/// The paused-holder timeline on `n` lock nodes, the data on a server of its own.
async fn a_stalled_holder_is_refused_and_marked_lost(n: usize) {
    let servers = nodes(n);
    let store = Server::start();
    let locks = manager(&servers);
    let mut conn = data(&store).await;
    let old = locks
        .try_lock("report", Duration::from_millis(300))
        .await
        .expect("granted");
    let _: () = old
        .guarded(&mut conn, "report:gate", &set("first"))
        .await
        .expect("current");
    tokio::time::sleep(Duration::from_millis(400)).await; // stalled past its lease
    let new = locks
        .try_lock("report", TTL)
        .await
        .expect("the lock is free again");
    assert!(new.token().await.unwrap() > old.token().await.unwrap());
    let _: () = new
        .guarded(&mut conn, "report:gate", &set("fresh"))
        .await
        .expect("current");
    let late: Result<(), Error> = old.guarded(&mut conn, "report:gate", &set("stale")).await;
    match late {
        Err(Error::Stale {
            ref gate, token, ..
        }) => {
            assert_eq!(
                (gate.as_str(), token),
                ("report:gate", old.token().await.unwrap())
            )
        }
        other => panic!("expected Stale, got {other:?}"),
    }
    assert!(late.unwrap_err().is_lost());
    assert!(old.is_lost() && old.validity() == Duration::ZERO);
    assert!(!new.is_lost());
    assert_eq!(get(&mut conn).await.as_deref(), Some("fresh"));
    new.release().await.expect("released");
}

#[tokio::test]
async fn one_node_a_stalled_holders_guarded_write_is_refused() {
    bounded(a_stalled_holder_is_refused_and_marked_lost(1)).await;
}

#[tokio::test]
async fn five_nodes_a_stalled_holders_guarded_write_is_refused() {
    bounded(a_stalled_holder_is_refused_and_marked_lost(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_write_fires_the_watchdogs_loss_signal_and_stops_it() {
    bounded(async {
        let servers = nodes(1);
        let locks = manager(&servers);
        let mut conn = data(&servers[0]).await;
        let guard = locks.try_lock("job", TTL).await.expect("granted");
        let watchdog = guard.watchdog(TTL);
        let context = watchdog.context();
        // A newer holder's write at the gate (what a takeover leaves behind).
        let _: () = redis::cmd("DLOCK.GUARD")
            .arg("job:gate")
            .arg(guard.token().await.unwrap() + 1)
            .arg("SET")
            .arg("job:out")
            .arg("newer")
            .query_async(&mut conn)
            .await
            .expect("the newer write");
        let write = redis::cmd("SET").arg("job:out").arg("mine").clone();
        let refused: Result<(), Error> = context.guarded(&mut conn, "job:gate", &write).await;
        assert!(matches!(refused, Err(Error::Stale { .. })), "{refused:?}");
        assert!(context.is_lost() && guard.is_lost());
        assert!(watchdog.stop().await, "the watchdog reports the loss");
        let out: String = redis::cmd("GET")
            .arg("job:out")
            .query_async(&mut conn)
            .await
            .expect("GET");
        assert_eq!(out, "newer");
    })
    .await;
}

#[tokio::test]
async fn the_wrapped_commands_own_error_is_a_guarded_error_and_the_lock_stays() {
    bounded(async {
        let servers = nodes(1);
        let locks = manager(&servers);
        let mut conn = data(&servers[0]).await;
        let guard = locks.try_lock("list", TTL).await.expect("granted");
        let _: () = redis::cmd("SET")
            .arg("a-string")
            .arg("x")
            .query_async(&mut conn)
            .await
            .expect("SET");
        let push = redis::cmd("LPUSH").arg("a-string").arg("y").clone();
        let wrong: Result<i64, Error> = guard.guarded(&mut conn, "list:gate", &push).await;
        match wrong {
            Err(Error::Guarded { ref message, .. }) => assert!(message.contains("WRONGTYPE")),
            other => panic!("expected Guarded, got {other:?}"),
        }
        assert!(
            !guard.is_lost(),
            "an error of the command's own says nothing of the lock"
        );
        guard.release().await.expect("released");
    })
    .await;
}

#[tokio::test]
async fn a_lock_known_lost_sends_nothing() {
    bounded(async {
        let servers = nodes(1);
        let locks = manager(&servers);
        let mut conn = data(&servers[0]).await;
        let guard = locks.try_lock("gone", TTL).await.expect("granted");
        let _: () = redis::cmd("DLOCK.GUARD")
            .arg("gone:gate")
            .arg(guard.token().await.unwrap() + 1)
            .arg("SET")
            .arg("report")
            .arg("newer")
            .query_async(&mut conn)
            .await
            .expect("the newer write");
        let first: Result<(), Error> = guard.guarded(&mut conn, "gone:gate", &set("a")).await;
        assert!(matches!(first, Err(Error::Stale { .. })), "{first:?}");
        // A gate that a newer holder has not touched would let it through: the lock says no.
        let second: Result<(), Error> = guard.guarded(&mut conn, "other:gate", &set("b")).await;
        assert!(matches!(second, Err(Error::LockLost { .. })), "{second:?}");
        assert_eq!(get(&mut conn).await.as_deref(), Some("newer"));
        let exists: bool = redis::cmd("EXISTS")
            .arg("other:gate")
            .query_async(&mut conn)
            .await
            .expect("EXISTS");
        assert!(!exists, "nothing was sent");
    })
    .await;
}
