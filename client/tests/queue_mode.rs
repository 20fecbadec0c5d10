//! `lock()` in queue mode against real nodes: waits on the servers in ticket order, no polling,
//! deadlines kept, nodes dying and coming back mid-wait, the lease not eaten by the wait, and
//! the watchdog's hold cap.

use crate::common::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager, WaitMode};

const LONG: Duration = Duration::from_secs(60);

/// `calls` of one command from `INFO commandstats` (0 when never called).
fn calls(server: &Server, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .expect("INFO");
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("calls"))
}

/// One service: who, with which token.
type Served = Arc<Mutex<Vec<(usize, u64)>>>;

/// Client `me` takes the lock `times` times, holding it 2 ms each, checking nobody else is in.
async fn take_turns(
    locks: LockManager,
    me: usize,
    times: usize,
    inside: Arc<AtomicBool>,
    served: Served,
) {
    for _ in 0..times {
        let guard = locks.lock("shared", TTL, LONG).await.expect("lock");
        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
        let token = guard.token().await.unwrap();
        served.lock().unwrap().push((me, token));
        tokio::time::sleep(Duration::from_millis(2)).await;
        inside.store(false, Ordering::SeqCst);
        guard.release().await.expect("release");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_on_five_nodes_take_turns_in_order_without_polling() {
    const CLIENTS: usize = 16;
    const TIMES: usize = 3;
    let servers = nodes(5);
    let inside = Arc::new(AtomicBool::new(false));
    let served: Served = Arc::default();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|me| {
            let client = manager(&servers); // a manager each: separate connections, own tickets
            tokio::spawn(take_turns(
                client,
                me,
                TIMES,
                inside.clone(),
                served.clone(),
            ))
        })
        .collect();
    for task in tasks {
        task.await.expect("client did not panic");
    }
    let served = served.lock().unwrap().clone();
    assert_eq!(
        served.len(),
        CLIENTS * TIMES,
        "every client served every time"
    );
    let tokens: Vec<u64> = served.iter().map(|&(_, token)| token).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens not increasing: {tokens:?}"
    );
    // Tickets are drawn when lock() is called, so between two services of one client each
    // other client gets about one turn: 15. Polling gives no such bound; allow twice that.
    for me in 0..CLIENTS {
        let turns: Vec<usize> = (0..served.len()).filter(|&i| served[i].0 == me).collect();
        let most_between = turns.windows(2).map(|w| w[1] - w[0] - 1).max().unwrap_or(0);
        eprintln!("client {me}: at most {most_between} turns of others between two of its own");
        assert!(
            most_between <= 2 * (CLIENTS - 1),
            "client {me} starved: {most_between} turns of others in between; {served:?}"
        );
    }
    // No polling: each acquisition costs one wait per node and round, plus the rounds a wound
    // or a late commit forces; a handful per node, not one per retry tick.
    let acquisitions = (CLIENTS * TIMES) as u64;
    for server in &servers {
        let per_acquisition = calls(server, "dlock.acquire") as f64 / acquisitions as f64;
        eprintln!(
            "{per_acquisition:.2} ACQUIREs per acquisition on {}",
            server.url()
        );
        assert!(
            per_acquisition <= 3.0,
            "{per_acquisition:.2} ACQUIREs per acquisition on one node"
        );
        assert_eq!(waiters(server, "shared"), 0, "no wait left behind");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_served_through_a_majority_killed_and_restarted() {
    // With an fsynced AOF, so the restarted nodes still know the first holder's lock.
    let mut servers: Vec<Server> = (0..5)
        .map(|_| {
            Server::builder()
                .config("appendonly", "yes")
                .config("appendfsync", "always")
                .start()
        })
        .collect();
    let holder = manager(&servers);
    let held = holder.try_lock("res", TTL).await.expect("free");
    let waiter = manager(&servers);
    let waiting = tokio::spawn(async move { waiter.lock("res", TTL, LONG).await });
    for server in &servers {
        eventually("queued on every node", || waiters(server, "res") == 1).await;
    }
    for i in [0, 1, 2] {
        servers[i].kill();
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // it finds them down, retries
    for i in [0, 1, 2] {
        servers[i].restart();
    }
    assert!(!waiting.is_finished(), "the first holder still holds it");
    let first_token = held.token().await.unwrap();
    held.release()
        .await
        .expect("released, restarted nodes included");
    let guard = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("served within 10 s of the restart")
        .expect("task")
        .expect("lock");
    let token = guard.token().await.unwrap();
    assert!(token > first_token);
    let holding = servers.iter().filter(|s| token_on(s, "res") == Some(token));
    assert!(holding.count() >= 3, "committed on a majority");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn nodes_that_were_busy_at_the_commit_grant_the_holder_later() {
    let servers = nodes(5);
    for server in &servers[3..] {
        let token: Option<u64> = redis::cmd("DLOCK.ACQUIRE")
            .arg("res")
            .arg("someone-else")
            .arg(30_000)
            .query(&mut server.conn())
            .unwrap();
        assert!(token.is_some());
    }
    let locks = manager(&servers);
    let guard = locks
        .lock("res", TTL, LONG)
        .await
        .expect("a majority is free");
    for server in &servers[3..] {
        assert_eq!(waiters(server, "res"), 1, "still queued after the commit");
        let released: i64 = redis::cmd("DLOCK.RELEASE")
            .arg("res")
            .arg("someone-else")
            .query(&mut server.conn())
            .unwrap();
        assert_eq!(released, 1);
    }
    let owner = guard.owner().to_string();
    for server in &servers[3..] {
        eventually("the late node grants the holder", || {
            let status: Vec<redis::Value> = redis::cmd("DLOCK.STATUS")
                .arg("res")
                .query(&mut server.conn())
                .unwrap();
            redis::from_redis_value_ref::<String>(&status[1]).ok() == Some(owner.clone())
        })
        .await;
    }
    guard.release().await.unwrap();
    assert!(
        servers.iter().all(|s| token_on(s, "res").is_none()),
        "released everywhere"
    );
}

#[tokio::test]
async fn the_wait_deadline_is_kept_within_50_ms_and_leaves_nothing_queued() {
    let servers = nodes(5);
    let holder = manager(&servers);
    let held = holder.try_lock("res", TTL).await.expect("free");
    // Its token committed (a no-wait hold commits on the first read) on every node.
    let token = held.token().await.unwrap();
    for server in &servers {
        eventually("committed everywhere", || {
            token_on(server, "res") == Some(token)
        })
        .await;
    }
    // The default 50 ms per-node timeout: an attempt lasts at least that long (so that a zero
    // wait still gets its answer), here the 400 ms wait is the longer.
    let waiter = LockManager::new(urls(&servers)).unwrap();
    let started = Instant::now();
    let error = waiter
        .lock("res", TTL, Duration::from_millis(400))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(error.is_contended(), "{error}");
    assert!(
        elapsed >= Duration::from_millis(400) && elapsed <= Duration::from_millis(450),
        "deadline 400 ms, answered after {elapsed:?}"
    );
    for server in &servers {
        eventually("the waits withdrawn", || waiters(server, "res") == 0).await;
        assert_eq!(token_on(server, "res"), Some(token), "the holder untouched");
    }
    held.release().await.unwrap();
}

#[tokio::test]
async fn waiting_does_not_eat_the_lease() {
    for n in [1, 3] {
        let servers = nodes(n);
        let ttl = Duration::from_millis(1_000);
        let holder = manager(&servers);
        let held = holder.try_lock("res", ttl).await.expect("free");
        let release_later = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(800)).await;
            held.release().await
        });
        let guard = manager(&servers)
            .lock("res", ttl, LONG)
            .await
            .expect("served");
        release_later.await.unwrap().unwrap();
        let validity = guard.validity();
        assert!(
            validity > Duration::from_millis(800),
            "{n} node(s): waited ~800 ms, yet only {validity:?} of the 1 s lease left"
        );
        let pttl: i64 = redis::cmd("PTTL")
            .arg("res")
            .query(&mut servers[0].conn())
            .unwrap();
        assert!(
            pttl > 800,
            "{n} node(s): the node's TTL was not renewed: {pttl} ms"
        );
    }
}

#[tokio::test]
async fn retry_mode_polls_and_queue_mode_does_not() {
    let servers = nodes(3);
    let mut acquires = Vec::new();
    for mode in [WaitMode::Retry, WaitMode::Queue] {
        let before = calls(&servers[0], "dlock.acquire");
        let holder = manager(&servers);
        let held = holder.try_lock("res", TTL).await.expect("free");
        let waiter = LockManager::builder(urls(&servers))
            .timeout(PATIENT)
            .wait_mode(mode)
            .build()
            .unwrap();
        let waiting = tokio::spawn(async move { waiter.lock("res", TTL, LONG).await });
        tokio::time::sleep(Duration::from_millis(1000)).await;
        held.release().await.unwrap();
        waiting
            .await
            .unwrap()
            .expect("served")
            .release()
            .await
            .unwrap();
        acquires.push(calls(&servers[0], "dlock.acquire") - before);
    }
    // Retry: one ACQUIRE per 25-50 ms tick over 1 s, about 25; at least 6 on a loaded machine
    // (CI once saw 3 in 500 ms). Queue: the holder's and one wait, however long it lasts.
    assert!(acquires[0] >= 6, "retry mode sent {} ACQUIREs", acquires[0]);
    assert_eq!(acquires[1], 2, "queue mode sent {} ACQUIREs", acquires[1]);
}

#[tokio::test]
async fn max_hold_stops_the_watchdog_and_signals_the_loss() {
    let servers = nodes(3);
    let locks = LockManager::builder(urls(&servers))
        .timeout(PATIENT)
        .max_hold(Some(Duration::from_millis(600)))
        .build()
        .unwrap();
    let started = Instant::now();
    let result = locks
        .with_lock("res", Duration::from_millis(300), LONG, |lock| async move {
            tokio::time::timeout(Duration::from_secs(5), lock.lost())
                .await
                .is_ok()
        })
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        result,
        Err(Error::LockLost {
            resource: "res".into()
        })
    );
    assert!(
        elapsed >= Duration::from_millis(600) && elapsed < Duration::from_millis(1_500),
        "signalled after {elapsed:?}"
    );
}
