//! Leader election: campaign with a value, work as leader with the epoch until leadership is
//! lost or the work is done, resign; and follow who leads (docs/election.md).
//!
//! ```sh
//! make run        # a Redis with the module on 127.0.0.1:6379, in another shell
//! cargo run --release --example election -p dlock-client
//! ```

use std::time::Duration;

use dlock_client::LockManager;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let nodes = std::env::var("DLOCK_NODES").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let locks = LockManager::new(nodes.split(','))?;
    // docs: election
    let mut observer = locks.observe("reports")?;
    println!("leader now: {:?}", observer.next().await);

    let leading = locks
        .campaign("reports", "10.0.0.1:8080", Duration::from_secs(10))
        .await?;
    println!("leading with epoch {}", leading.epoch());
    tokio::select! {
        // The work: every write it makes carries the epoch as its fencing token.
        _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        // Lost at the renew deadline (or refused by the nodes): stop at once.
        _ = leading.lost() => return Err("leadership lost".into()),
    }
    leading.resign().await?;
    // docs: end
    Ok(())
}
