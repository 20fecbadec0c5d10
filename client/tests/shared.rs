//! Shared locks and semaphores through the quorum client on real nodes, on 1 and on 5 masters:
//! many readers at once and no writer beside them, a semaphore never above its limit with its
//! holders' tokens rising, the semaphore's larger quorum (N=5, k=2 needs 4 nodes), and a kind
//! mismatch refused at once.

use crate::common::*;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dlock_client::{Error, LockKind, LockManager, Resource};

const LONG: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_share_and_a_writer_waits_for_them_on_1_and_5_masters() {
    for n in [1, 5] {
        let servers = nodes(n);
        let locks = manager(&servers);
        let a = locks
            .try_lock(Resource::shared("doc"), TTL)
            .await
            .expect("reader a");
        let b = locks
            .try_lock(Resource::shared("doc"), TTL)
            .await
            .expect("reader b");
        assert!(
            a.token().await.unwrap() < b.token().await.unwrap(),
            "N={n}: each reader its own rising token"
        );
        assert_eq!(a.kind(), LockKind::Shared);
        let writer = locks.try_lock("doc", TTL).await;
        assert!(
            matches!(writer, Err(Error::Contended { .. })),
            "N={n}: {writer:?}"
        );
        let waiting = {
            let locks = manager(&servers);
            tokio::spawn(async move { locks.lock("doc", TTL, LONG).await?.token().await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let late = locks.try_lock(Resource::shared("doc"), TTL).await;
        assert!(
            late.is_err(),
            "N={n}: a queued writer holds back a later reader"
        );
        a.release().await.expect("release a");
        assert!(!waiting.is_finished(), "N={n}: one reader still in");
        let b_token = b.token().await.unwrap();
        b.release().await.expect("release b");
        let writer = waiting.await.expect("task").expect("the writer gets it");
        assert!(writer > b_token, "N={n}");
    }
}

/// `workers` contenders each take a permit `rounds` times, counting who is inside.
async fn contend(
    servers: &[Server],
    limit: u32,
    workers: usize,
    rounds: usize,
) -> (usize, Vec<u64>) {
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (locks, inside, most, tokens) = (
            manager(servers),
            inside.clone(),
            most.clone(),
            tokens.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = locks
                    .lock(Resource::semaphore("pool", limit), TTL, LONG)
                    .await
                    .expect("permit");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let token = guard.token().await.unwrap();
                tokens.lock().unwrap().push(token);
                tokio::time::sleep(Duration::from_millis(15)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        task.await.expect("worker");
    }
    let tokens = tokens.lock().unwrap().clone();
    (most.load(Ordering::SeqCst), tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_semaphore_never_admits_more_than_its_limit_on_1_and_5_masters() {
    for n in [1, 5] {
        let servers = nodes(n);
        let (most, tokens) = contend(&servers, 2, 5, 4).await;
        assert_eq!(most, 2, "N={n}: the limit is reached and never passed");
        let mut unique = tokens.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            tokens.len(),
            "N={n}: every grant its own token"
        );
    }
}

#[tokio::test]
async fn a_semaphore_needs_its_larger_quorum() {
    let mut servers = nodes(5);
    for server in servers.iter_mut().take(2) {
        server.kill();
    }
    let locks = LockManager::builder(urls(&servers))
        .timeout(PATIENT)
        .build()
        .unwrap();
    let exclusive = locks.try_lock("x", TTL).await;
    assert!(exclusive.is_ok(), "3 of 5 make a majority: {exclusive:?}");
    let permit = locks.try_lock(Resource::semaphore("pool", 2), TTL).await;
    match permit {
        Err(Error::NoQuorum { needed, .. }) => assert_eq!(needed, 4, "N=5, k=2"),
        other => panic!("expected NoQuorum, got {other:?}"),
    }
    let wide = locks.try_lock(Resource::semaphore("wide", 1), TTL).await;
    assert!(wide.is_ok(), "k=1 is a mutex: a majority: {wide:?}");
}

#[tokio::test]
async fn a_kind_mismatch_is_refused_at_once_and_a_bad_limit_before_any_node() {
    let servers = nodes(3);
    let locks = manager(&servers);
    let _held = locks
        .try_lock(Resource::semaphore("pool", 3), TTL)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mismatch = locks.lock(Resource::semaphore("pool", 2), TTL, LONG).await;
    match mismatch {
        Err(Error::WrongKind { message, .. }) => assert!(message.contains("LIMIT 3"), "{message}"),
        other => panic!("expected WrongKind, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not retried until the wait ends"
    );
    let bad = locks.try_lock(Resource::semaphore("pool", 0), TTL).await;
    assert!(matches!(bad, Err(Error::InvalidArgument(_))), "{bad:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_semaphore_keeps_its_limit_and_its_progress_with_a_sigstopped_node() {
    let servers = nodes(5);
    servers[2].pause(); // SIGSTOP: it neither answers nor forgets
    let (most, tokens) = contend(&servers, 2, 4, 3).await;
    servers[2].resume();
    assert_eq!(
        most, 2,
        "the limit is reached on the 4 live nodes and never passed"
    );
    assert_eq!(tokens.len(), 12, "every round served");
    let locks = manager(&servers);
    let after = locks.try_lock(Resource::semaphore("pool", 2), TTL).await;
    assert!(after.is_ok(), "the resumed node rejoins: {after:?}");
}
