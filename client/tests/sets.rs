//! Sets across three nodes (docs/multi.md): all or nothing on every node, waiting without
//! holding, opposite orders without deadlock, a member lost loses the set.

use crate::common::*;

use std::sync::Arc;
use std::time::Duration;

use dlock_client::{Error, LockSet};

fn set(names: &[&str]) -> LockSet {
    LockSet::new(names.iter().copied()).expect("a valid set")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_is_held_whole_on_a_majority_or_not_at_all() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let servers = nodes(3);
        let locks = manager(&servers);
        let blocker = locks.try_lock("b", TTL).await.expect("b");
        let refused = locks.try_lock_all(&set(&["a", "b", "c"]), TTL).await;
        assert!(
            matches!(refused, Err(Error::Contended { .. })),
            "{refused:?}"
        );
        assert!(locks.settle(Duration::from_secs(5)).await);
        for server in &servers {
            assert_eq!(
                token_on(server, "a"),
                None,
                "nothing held after a refused set"
            );
            assert_eq!(token_on(server, "c"), None);
        }
        blocker.release().await.expect("released");
        let guard = locks
            .try_lock_all(&set(&["a", "b", "c"]), TTL)
            .await
            .expect("the set");
        let token = guard.token().await.expect("committed");
        for key in ["a", "b", "c"] {
            eventually("the token on every node", || {
                servers.iter().all(|s| token_on(s, key) == Some(token))
            })
            .await;
        }
        guard.release().await.expect("released");
        for key in ["a", "b", "c"] {
            assert!(servers.iter().all(|s| token_on(s, key).is_none()), "{key}");
        }
    })
    .await
    .expect("within the time limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_in_opposite_orders_all_complete_and_never_overlap() {
    tokio::time::timeout(Duration::from_secs(90), async {
        let servers = nodes(3);
        let locks = Arc::new(manager(&servers));
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for worker in 0..4 {
            let (locks, inside) = (locks.clone(), inside.clone());
            let names = if worker % 2 == 0 {
                ["p", "q"]
            } else {
                ["q", "p"]
            };
            tasks.push(tokio::spawn(async move {
                for _ in 0..10 {
                    let wait = Duration::from_secs(20);
                    let guard = locks
                        .lock_all(&set(&names), TTL, wait)
                        .await
                        .expect("granted");
                    let before = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    assert_eq!(before, 0, "two holders of p and q at once");
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    guard.release().await.expect("released");
                }
            }));
        }
        for task in tasks {
            task.await.expect("a worker finished");
        }
    })
    .await
    .expect("no deadlock: every worker finished in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_deleted_everywhere_loses_the_whole_set() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let servers = nodes(3);
        let locks = manager(&servers);
        let mut guard = locks
            .lock_all(&set(&["x", "y"]), TTL, TTL)
            .await
            .expect("the set");
        for server in &servers {
            let _: () = redis::cmd("DEL")
                .arg("x")
                .query(&mut server.conn())
                .expect("DEL");
        }
        let extended = guard.extend(TTL).await;
        assert!(
            matches!(extended, Err(Error::LockLost { .. })),
            "{extended:?}"
        );
        for server in &servers {
            assert_eq!(token_on(server, "y"), None, "the node gave back the rest");
        }
    })
    .await
    .expect("within the time limit");
}

/// On a Redis Cluster node a set whose keys span slots is taken slot group by slot group
/// (docs/multi.md): each resource held on its slot's master with its group's token, the whole
/// given back when a later group is refused, a lost group losing the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_across_cluster_slots_is_taken_group_by_group_and_given_back_whole() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let cluster = dlock_testkit::Cluster::start(3, 1);
        let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes[0].port());
        let ack = dlock_client::ReplicaAck::Auto {
            timeout: Duration::from_secs(2),
        };
        let locks = dlock_client::LockManager::builder([url])
            .timeout(PATIENT)
            .replica_ack(ack)
            .build()
            .expect("a cluster URL");
        let names = ["{x}1", "{x}2", "{y}1", "{z}1"];
        let groups = dlock_client::set_groups(&names.map(String::from));
        assert!(groups.len() >= 2, "{groups:?}");
        let guard = locks
            .try_lock_all(&set(&names), TTL)
            .await
            .expect("the set");
        assert_eq!(guard.groups(), groups.len());
        assert!(matches!(
            guard.token().await,
            Err(Error::InvalidArgument(_))
        ));
        let tokens = guard.tokens().await.expect("committed");
        assert_eq!(tokens[0], tokens[1], "one slot, one token");
        for (name, token) in names.iter().zip(&tokens) {
            let master = &cluster.nodes[cluster.master_for(name)];
            assert_eq!(token_on(master, name), Some(*token), "{name}");
        }
        guard.release().await.expect("released");
        // A later group held by someone else: the earlier groups are given back.
        let last = groups.last().expect("groups")[0].clone();
        let blocker = locks.try_lock(last.as_str(), TTL).await.expect("blocker");
        let refused = locks.try_lock_all(&set(&names), TTL).await;
        assert!(refused.is_err(), "{refused:?}");
        for name in names.iter().filter(|n| **n != last) {
            let master = &cluster.nodes[cluster.master_for(name)];
            assert_eq!(token_on(master, name), None, "{name} given back");
        }
        blocker.release().await.expect("released");
        // A lost group loses the set.
        let mut guard = locks
            .lock_all(&set(&names), TTL, TTL)
            .await
            .expect("the set");
        let master = &cluster.nodes[cluster.master_for("{y}1")];
        let _: () = redis::cmd("DEL")
            .arg("{y}1")
            .query(&mut master.conn())
            .expect("DEL");
        let extended = guard.extend(TTL).await;
        assert!(
            matches!(extended, Err(Error::LockLost { .. })),
            "{extended:?}"
        );
        assert!(guard.is_lost());
    })
    .await
    .expect("within the time limit");
}
