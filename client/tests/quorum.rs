//! The Redlock algorithm against real nodes: quorum, failures, pauses, contention, fencing.

use crate::common::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_client::{Error, LockManager};

#[tokio::test]
async fn five_nodes_grant_and_commit_one_token_everywhere() {
    let servers = nodes(5);
    let locks = manager(&servers);
    let guard = locks.try_lock("res", TTL).await.expect("granted");
    // The first read commits it: on a majority before it returns, on the others right after.
    let token = guard.token().await.unwrap();
    for server in &servers {
        let fenced = || token_on(server, "res") == Some(token);
        eventually("the fenced token on every node", fenced).await;
    }
    let validity = guard.validity();
    assert!(
        validity > TTL - Duration::from_millis(300) && validity < TTL,
        "{validity:?}"
    );
    assert!(locks.try_lock("res", TTL).await.unwrap_err().is_contended());
    guard.release().await.unwrap();
    assert!(
        servers.iter().all(|s| token_on(s, "res").is_none()),
        "released everywhere"
    );
}

#[tokio::test]
async fn two_of_five_down_still_works() {
    let mut servers = nodes(5);
    servers[0].kill();
    servers[3].kill();
    let locks = manager(&servers);
    let guard = locks
        .lock("res", TTL, Duration::from_secs(2))
        .await
        .expect("majority of 3");
    assert!(guard.token().await.unwrap() > 0);
    guard.release().await.expect("release reaches a majority");
}

#[tokio::test]
async fn three_of_five_down_is_a_no_quorum_error_naming_them() {
    let mut servers = nodes(5);
    let down: Vec<String> = [0, 2, 4].iter().map(|&i| servers[i].url()).collect();
    for i in [0, 2, 4] {
        servers[i].kill();
    }
    let locks = manager(&servers);
    let started = Instant::now();
    let error = locks
        .lock("res", TTL, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    let Error::NoQuorum {
        needed, failures, ..
    } = &error
    else {
        panic!("expected NoQuorum, got {error}")
    };
    assert_eq!(*needed, 3);
    let failed: Vec<&str> = failures.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(failed, down.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        error
            .to_string()
            .contains("connection refused: is the server running"),
        "{error}"
    );
    for i in [1, 3] {
        assert_eq!(
            token_on(&servers[i], "res"),
            None,
            "partial grants were released"
        );
    }
}

#[tokio::test]
async fn a_paused_node_costs_at_most_the_per_node_timeout() {
    let servers = nodes(5);
    let locks = LockManager::builder(urls(&servers))
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    locks
        .try_lock("warm-up", TTL)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    servers[2].pause();
    let started = Instant::now();
    let guard = locks.try_lock("res", TTL).await.expect("4 of 5 grant");
    let elapsed = started.elapsed();
    servers[2].resume();
    assert!(
        elapsed < Duration::from_millis(50 + 100),
        "took {elapsed:?}"
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_contending_tasks_never_overlap_and_tokens_increase() {
    let servers = nodes(5);
    let locks = manager(&servers);
    let inside = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (locks, inside, tokens) = (locks.clone(), inside.clone(), tokens.clone());
            tokio::spawn(async move {
                for _ in 0..3 {
                    let guard = locks
                        .lock("shared", TTL, Duration::from_secs(30))
                        .await
                        .expect("lock");
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    let token = guard.token().await.unwrap();
                    tokens.lock().unwrap().push(token);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.store(false, Ordering::SeqCst);
                    guard.release().await.expect("release");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task did not panic");
    }
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 60);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens not increasing: {tokens:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_majority_to_wiped_restarts_is_signalled() {
    let servers = Arc::new(Mutex::new(nodes(5)));
    let locks = manager(&servers.lock().unwrap());
    let ttl = Duration::from_millis(900);
    let wiper = servers.clone();
    let result = locks
        .with_lock("res", ttl, Duration::from_secs(1), |lock| async move {
            assert!(!lock.is_lost());
            tokio::task::spawn_blocking(move || {
                let mut servers = wiper.lock().unwrap();
                for i in 0..3 {
                    servers[i].restart_empty();
                }
            })
            .await
            .unwrap();
            let signalled = tokio::time::timeout(Duration::from_secs(3), lock.lost()).await;
            assert!(signalled.is_ok(), "loss not signalled within 3 s");
            lock.is_lost()
        })
        .await;
    assert_eq!(
        result,
        Err(Error::LockLost {
            resource: "res".into()
        })
    );
}

#[tokio::test]
async fn with_lock_keeps_the_lock_past_its_ttl_and_releases_after() {
    let servers = nodes(3);
    let locks = manager(&servers);
    let ttl = Duration::from_millis(300);
    let token = locks
        .with_lock("res", ttl, Duration::from_secs(1), |lock| async move {
            tokio::time::sleep(Duration::from_millis(1_000)).await; // > 3 TTLs
            assert!(!lock.is_lost());
            lock.token().await.unwrap()
        })
        .await
        .expect("not lost");
    assert!(token > 0);
    assert!(
        servers.iter().all(|s| token_on(s, "res").is_none()),
        "released after the work"
    );
}

#[tokio::test]
async fn guard_extend_resets_validity_and_release_frees() {
    let servers = nodes(3);
    let locks = manager(&servers);
    let mut guard = locks
        .try_lock("res", Duration::from_millis(500))
        .await
        .unwrap();
    guard.extend(Duration::from_secs(20)).await.unwrap();
    assert!(guard.validity() > Duration::from_secs(19));
    guard.release().await.unwrap();
    assert!(locks.try_lock("res", TTL).await.is_ok());
}

#[tokio::test]
async fn extend_and_release_without_a_majority_name_the_unreachable_nodes() {
    let mut servers = nodes(3);
    let locks = manager(&servers);
    let mut guard = locks.try_lock("res", TTL).await.unwrap();
    let held_on = guard.validity();
    servers[0].kill();
    servers[2].kill();
    let down = [servers[0].url(), servers[2].url()];
    let failed_nodes = |error: &Error| -> Vec<String> {
        match error {
            Error::NoQuorum { failures, .. } => failures.iter().map(|f| f.node.clone()).collect(),
            other => panic!("expected NoQuorum, got {other}"),
        }
    };
    let error = guard.extend(TTL).await.unwrap_err();
    assert_eq!(failed_nodes(&error), down.to_vec(), "{error}");
    assert!(
        guard.validity() <= held_on,
        "a failed extend keeps the old deadline"
    );
    // Back up (empty): a majority answers "not yours", a lost lock rather than a quorum problem.
    servers[0].restart();
    servers[2].restart();
    assert!(matches!(
        locks.extend_owner("res", "someone-else", TTL).await,
        Err(Error::LockLost { .. })
    ));
    servers[0].kill();
    servers[2].kill();
    let error = guard.release().await.unwrap_err();
    assert_eq!(failed_nodes(&error), down.to_vec(), "{error}");
}

/// 10 ms less the drift allowance (1% + 9.8 ms) leaves 0.1 ms: valid when asked for (a TTL the
/// allowance leaves nothing of is refused before anything is sent), gone long before three nodes
/// have granted and committed.
#[tokio::test]
async fn a_ttl_too_short_for_the_round_trip_is_validity_expired() {
    let servers = nodes(3);
    let locks = LockManager::builder(urls(&servers))
        .timeout(PATIENT)
        .drift_constant(Duration::from_micros(9_800))
        .build()
        .expect("valid node URLs");
    let error = locks
        .try_lock("res", Duration::from_millis(10))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::ValidityExpired {
            resource: "res".into()
        }
    );
    assert!(
        servers.iter().all(|s| token_on(s, "res").is_none()),
        "grants released"
    );
}

/// protocol.md §4: node A far ahead, B and C behind. Without the FENCE phase a later holder
/// that misses A gets a smaller token; with it, tokens stay ordered.
#[tokio::test]
async fn quorum_fencing_keeps_tokens_ordered_when_nodes_disagree() {
    for fencing in [true, false] {
        let mut servers = nodes(3);
        // Half a year above any clock-floored token (nodes accept at most a year of lead).
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let ahead = now_us + 182 * 24 * 3600 * 1_000_000;
        // Raise node A's counter the public way: fence a throwaway lock high, release it.
        let mut a = servers[0].conn();
        let _: i64 = redis::cmd("DLOCK.ACQUIRE")
            .arg(&["setup", "x", "60000"])
            .query(&mut a)
            .unwrap();
        let fenced: i64 = redis::cmd("DLOCK.FENCE")
            .arg("setup")
            .arg("x")
            .arg(ahead)
            .query(&mut a)
            .unwrap();
        assert_eq!(fenced, 1);
        let _: i64 = redis::cmd("DLOCK.RELEASE")
            .arg(&["setup", "x"])
            .query(&mut a)
            .unwrap();
        let locks = LockManager::builder(urls(&servers))
            .timeout(PATIENT)
            .fencing(fencing)
            .build()
            .unwrap();
        let first = locks.try_lock("res", TTL).await.unwrap();
        let t1 = first.token().await.unwrap();
        assert!(t1 > ahead);
        first.release().await.unwrap();
        servers[0].kill();
        let second = locks.try_lock("res", TTL).await.expect("B and C grant");
        if fencing {
            assert!(
                second.token().await.unwrap() > t1,
                "fenced: {} > {t1}",
                second.token().await.unwrap()
            );
        } else {
            assert!(
                second.token().await.unwrap() < t1,
                "the counterexample: unfenced tokens go backwards"
            );
        }
    }
}

#[tokio::test]
async fn one_node_returns_its_own_token_without_fencing() {
    let servers = nodes(1);
    let locks = manager(&servers);
    let guard = locks.try_lock("res", TTL).await.unwrap();
    assert_eq!(
        token_on(&servers[0], "res"),
        Some(guard.token().await.unwrap())
    );
    let info: String = redis::cmd("INFO")
        .arg("dlock")
        .query(&mut servers[0].conn())
        .unwrap();
    assert!(
        info.contains("dlock_fences:0"),
        "no FENCE round with one node"
    );
}

#[tokio::test]
async fn a_node_in_quarantine_counts_as_failed_with_its_reason() {
    let server = Server::builder()
        .config("dlock.quarantine-ms", "60000")
        .start();
    let locks = LockManager::new([server.url()]).unwrap();
    let error = locks.try_lock("res", TTL).await.unwrap_err();
    assert!(matches!(error, Error::NoQuorum { .. }), "{error}");
    assert!(error.to_string().contains("TRYAGAIN"), "{error}");
}
