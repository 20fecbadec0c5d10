//! `LockManager::top` and `queue_state` against real nodes: the hot locks of each node (waiting
//! keys, held locks over a keyspace walked in steps) and a waiter's place in the queue, which
//! `lock_probed` names while it waits.

use crate::common::*;

use std::time::Duration;

use dlock_client::{LockManager, WaitProbe};

#[tokio::test]
async fn top_lists_each_node_s_waiting_and_held_locks() {
    let servers = nodes(3);
    let locks = manager(&servers);
    let held = locks.lock("orders", TTL, TTL).await.expect("held");
    let quiet = locks.lock("quiet", TTL, TTL).await.expect("held");
    let probe = WaitProbe::new();
    let waiting = locks.lock_probed("orders", TTL, Duration::from_secs(20), &probe);
    tokio::pin!(waiting);
    let queued = async {
        while servers.iter().any(|s| waiters(s, "orders") == 0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        _ = &mut waiting => panic!("granted while held"),
        _ = queued => {}
    }
    let top = locks.top(10).await;
    assert_eq!(top.len(), 3);
    for (node, server) in top.iter().zip(&servers) {
        let view = node.state.as_ref().expect("answered");
        assert!(view.complete);
        assert_eq!(view.waiting.len(), 1, "{}", node.node);
        let queue = &view.waiting[0];
        assert_eq!((queue.resource.as_str(), queue.waiters), ("orders", 1));
        let holder = queue.holder.as_ref().expect("held");
        assert_eq!(holder.owner, held.owner());
        assert_eq!(Some(holder.token), token_on(server, "orders"));
        let names: Vec<&str> = view.held.iter().map(|h| h.resource.as_str()).collect();
        assert_eq!(names, ["orders", "quiet"], "most waiters first");
        assert_eq!(view.held_total, 2);
    }
    assert_eq!(
        locks.top(1).await[0].state.as_ref().expect("ok").held.len(),
        1
    );

    let me = probe.owner().expect("the probe names the waiting owner");
    for node in locks.queue_state("orders", &me).await {
        let state = node.state.expect("answered");
        assert_eq!((state.position, state.waiters), (Some(1), 1));
        assert_eq!(state.holders[0].owner, held.owner());
        assert!(state.holders[0].ttl <= TTL);
    }
    held.release().await.expect("released");
    let won = waiting.await.expect("handed over");
    assert!(won.owner().starts_with(me.split(':').next().expect("base")));
    won.release().await.expect("released");
    quiet.release().await.expect("released");
}

#[tokio::test]
async fn a_cluster_node_is_refused_by_name_and_a_dead_node_says_why() {
    let server = Server::start();
    let dead = dlock_testkit::free_port();
    let urls = vec![
        server.url(),
        format!("redis://127.0.0.1:{dead}"),
        "redis+cluster://127.0.0.1:1".to_string(),
    ];
    let locks = LockManager::builder(urls)
        .timeout(PATIENT)
        .build()
        .expect("valid");
    let top = locks.top(5).await;
    assert!(top[0].state.is_ok());
    assert!(top[1].state.is_err());
    let refused = top[2].state.as_ref().expect_err("refused");
    assert!(refused.contains("redis:// URL"), "{refused}");
}
