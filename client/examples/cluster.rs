//! A Redis Cluster as a node: a `redis+cluster://` URL names any node of the cluster; the client
//! reads the slot map, sends each lock to its slot's master (following MOVED / ASK), and counts
//! the whole cluster as one node of the quorum. By default each grant, extension and commit there
//! counts only once one replica has it (`ReplicaAck::Auto`), so a failover cannot lose it.
//!
//! ```sh
//! make redis-cluster      # 3 masters + 3 replicas on 7101-7106, in another shell
//! cargo run --release --example cluster -p dlock-client
//! ```

use std::time::Duration;

use dlock_client::LockManager;

/// The node URLs: `DLOCK_NODES` (comma-separated), else `default`.
fn node_urls(default: &str) -> Vec<String> {
    let list = std::env::var("DLOCK_NODES").unwrap_or_else(|_| default.to_string());
    list.split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(String::from)
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let locks = LockManager::new(node_urls("redis+cluster://127.0.0.1:7101"))?;
    let ttl = Duration::from_secs(10);
    let wait = Duration::from_secs(5);

    // Slots 12707, 448 and 8454: one on each master of `make redis-cluster`.
    for resource in ["orders:1", "orders:2", "orders:4"] {
        let guard = locks.lock(resource, ttl, wait).await?;
        println!("{resource}: token {}", guard.token().await?);
        for node in locks.status(resource).await? {
            match node.state.as_ref().map(|held| held.holders.first()) {
                Ok(Some(lock)) => println!(
                    "  {}: held by {}, token {}, {} ms left",
                    node.node, lock.owner, lock.token, lock.ttl_ms
                ),
                Ok(None) => println!("  {}: free", node.node),
                Err(reason) => println!("  {}: unreachable: {reason}", node.node),
            }
        }
        guard.release().await?;
    }
    Ok(())
}
