use std::time::Duration;

use dlock_client::{Error, LockManager};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Any number of masters (make run's one here); connected to when first used.
    let locks = LockManager::new(["redis://127.0.0.1:6379"])?;
    let ttl = Duration::from_secs(10);

    // One attempt: Err(Error::Contended) at once when someone else holds it.
    let guard = locks.try_lock("orders:42", ttl).await?;
    println!("token {}", guard.token().await?); // hand it to the resource, which refuses lower ones
    guard.release().await?;

    // Or wait up to 5 s, queued on the nodes: granted the moment the holder releases.
    let guard = locks.lock("orders:42", ttl, Duration::from_secs(5)).await?;
    guard.release().await?;
    Ok(())
}
