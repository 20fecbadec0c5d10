//! Many local waiters, few server waits (client/src/local_waits.rs): the callers of one manager
//! waiting for one resource keep one wait on each node, not one each, and still exclude each
//! other and are all served.

use crate::common::*;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dlock_client::LockManager;

const LONG: Duration = Duration::from_secs(60);

/// `blocked_clients` of a node's `INFO clients`: its connections inside a server-side wait.
fn blocked(server: &Server) -> usize {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut server.conn())
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .map_or(0, |n| n.trim().parse().expect("a count"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_waiters_of_one_manager_keep_one_wait_per_node_and_are_all_served() {
    const WAITERS: usize = 500;
    let servers = nodes(3);
    let held = manager(&servers).try_lock("r", TTL).await.expect("free");
    let locks = Arc::new(manager(&servers));
    let (inside, served) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let tasks: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (locks, inside, served) = (locks.clone(), inside.clone(), served.clone());
            tokio::spawn(async move {
                let guard = locks.lock("r", TTL, LONG).await.expect("served");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                served.fetch_add(1, Ordering::SeqCst);
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
            })
        })
        .collect();
    // Every caller has arrived and the first waits on the nodes: one queued owner, one blocked
    // connection per node, for all 500.
    for server in &servers {
        eventually("one waiter queued", || waiters(server, "r") == 1).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for server in &servers {
        assert_eq!(waiters(server, "r"), 1, "one server-side wait per resource");
        assert_eq!(blocked(server), 1, "one blocked connection per node");
    }
    let started = Instant::now();
    held.release().await.expect("release");
    for task in tasks {
        task.await.expect("a waiter did not panic");
    }
    assert_eq!(
        served.load(Ordering::SeqCst),
        WAITERS,
        "every waiter served"
    );
    println!("{WAITERS} local waiters served in {:?}", started.elapsed());
}

#[tokio::test]
async fn a_local_waiter_whose_time_runs_out_gets_contended_on_time() {
    let servers = nodes(3);
    let held = manager(&servers).try_lock("r", TTL).await.expect("free");
    let locks = Arc::new(manager(&servers));
    let first = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.lock("r", TTL, Duration::from_secs(10)).await })
    };
    for server in &servers {
        eventually("the first waits on the node", || waiters(server, "r") == 1).await;
    }
    // The second waits in the process behind the first; at its deadline it tries once. "On time"
    // is well before the first's 10 s wait ends (what a waiter deaf to its own deadline would
    // wait for), with room for a loaded 2-core machine (CI once took 1.3 s).
    let started = Instant::now();
    let error = locks
        .lock("r", TTL, Duration::from_millis(300))
        .await
        .expect_err("held");
    let elapsed = started.elapsed();
    assert!(error.is_contended(), "{error}");
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed <= Duration::from_millis(2_500),
        "deadline 300 ms, answered after {elapsed:?}"
    );
    held.release().await.expect("release");
    let guard = first.await.expect("task").expect("the first is served");
    guard.release().await.expect("release");
}

#[tokio::test]
async fn separate_managers_wait_on_the_nodes_each() {
    let servers = nodes(3);
    let held = manager(&servers).try_lock("r", TTL).await.expect("free");
    let waiting: Vec<LockManager> = (0..3).map(|_| manager(&servers)).collect();
    let tasks: Vec<_> = waiting
        .into_iter()
        .map(|locks| tokio::spawn(async move { locks.lock("r", TTL, LONG).await.map(drop) }))
        .collect();
    for server in &servers {
        eventually("three processes queued", || waiters(server, "r") == 3).await;
    }
    held.release().await.expect("release");
    for task in tasks {
        task.await.expect("task").expect("served");
    }
}

/// A shared hold waits on the nodes each time (the local-waits adversary): a turn in the process
/// put the second reader behind another process's writer that queued after the first reader.
#[tokio::test]
async fn two_readers_of_one_manager_hold_together_past_another_processs_writer() {
    use dlock_client::Resource;
    let servers = nodes(3);
    let held = manager(&servers).try_lock("rw", TTL).await.expect("free");
    let readers = Arc::new(manager(&servers));
    let read = |wait: Duration| {
        let readers = readers.clone();
        tokio::spawn(async move { readers.lock(Resource::shared("rw"), TTL, wait).await })
    };
    let first = read(Duration::from_secs(3));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = read(Duration::from_secs(3));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let writer = manager(&servers);
    let written = tokio::spawn(async move { writer.lock("rw", TTL, LONG).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    held.release().await.expect("release");
    let one = first.await.expect("task").expect("the first reader");
    let started = Instant::now();
    let two = second
        .await
        .expect("task")
        .expect("the second reader, beside the first");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "behind the writer"
    );
    two.release().await.expect("release");
    one.release().await.expect("release");
    written
        .await
        .expect("task")
        .expect("the writer")
        .release()
        .await
        .expect("release");
}
