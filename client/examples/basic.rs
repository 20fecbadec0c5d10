//! Take a lock, hand its fencing token to the protected resource, release it: `try_lock` (one
//! attempt), then `lock` (waits its turn while someone else holds it).
//!
//! ```sh
//! make run        # a Redis with the module on 127.0.0.1:6379, in another shell
//! cargo run --release --example basic -p dlock-client
//! DLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 \
//!   cargo run --release --example basic -p dlock-client     # a quorum of masters (make cluster)
//! ```

use std::time::Duration;

use dlock_client::LockManager;

const RESOURCE: &str = "orders:42";

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
    let locks = LockManager::new(node_urls("redis://127.0.0.1:6379"))?;
    let ttl = Duration::from_secs(10);

    // One attempt: granted now, or an error now (`Error::Contended` when someone holds it).
    let first = locks.try_lock(RESOURCE, ttl).await?;
    // Reading the token commits it on a majority first (one more round trip, paid only by
    // holders that use their token: docs/protocol.md §4.1).
    let first_token = first.token().await?;
    println!(
        "try_lock: token {} for owner {}, valid for {} ms",
        first_token,
        first.owner(),
        first.validity().as_millis()
    );
    // Every write to the protected resource carries the token; the resource rejects a token
    // lower than the highest it has seen, so a holder that lost the lock cannot overwrite.

    match locks.try_lock(RESOURCE, ttl).await {
        Err(e) if e.is_contended() => println!("try_lock while held: {e}"),
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("a second owner was granted a held lock".into()),
    }

    // `lock` waits up to 5 s: queued on the nodes, granted when the holder releases.
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move { locks.lock(RESOURCE, ttl, Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    first.release().await?;
    println!("released token {first_token}");
    let second = waiter.await??;
    let second_token = second.token().await?; // a queued lock committed while acquiring
    println!(
        "lock (waited for the release): token {} for owner {}",
        second_token,
        second.owner()
    );
    if second_token <= first_token {
        return Err("tokens must rise from one holder to the next".into());
    }
    second.release().await?;
    println!("released");
    Ok(())
}
