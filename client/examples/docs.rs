//! The Rust blocks of the docs: each page shows one `// docs: NAME` region of this file
//! (docs/rust.md, shared.md, connecting.md, cluster.md; tests/docs checks the text is the same,
//! and `python3 tests/docs/examples.py --bless` copies it there), and `cargo test` compiles it.
//! The functions are not run: `main` only makes them used.

use std::path::Path;
use std::time::Duration;

use dlock_client::{Error, LockKind, LockManager, LockSet, Resource, Tls};

async fn library() -> Result<(), Error> {
    // docs: library
    let locks = LockManager::builder([
        "redis://10.0.0.1:6379",
        "redis://10.0.0.2:6379",
        "redis://10.0.0.3:6379",
    ])
    .timeout(Duration::from_millis(50))
    .build()?; // checks the URLs; connects when first used

    // One attempt: Err(Error::Contended) at once while someone else holds it.
    let guard = locks.try_lock("orders:42", Duration::from_secs(10)).await?;
    guard.release().await?;

    // Or wait up to 5 s, queued on the nodes in arrival order (no polling):
    let ttl = Duration::from_secs(10);
    let mut guard = locks.lock("orders:42", ttl, Duration::from_secs(5)).await?;
    write_with_token(guard.token().await?); // the resource rejects tokens lower than it has seen
    guard.extend(ttl).await?;
    println!("{} ms left", guard.validity().as_millis());
    guard.release().await?;

    // Work under a watchdog that extends every ttl/3 and signals a loss at once:
    let wait = Duration::from_secs(5);
    let done = locks
        .with_lock("orders:42", ttl, wait, |lock| async move {
            let token = lock.token().await.ok()?; // Err(LockLost): its commit failed
            tokio::select! {
                out = do_work(token) => Some(out),
                _ = lock.lost() => None, // an extension missed a majority, or validity ran out
            }
        })
        .await?; // Err(Error::LockLost) if the lock was lost meanwhile
    println!("{done:?}");
    // docs: end
    Ok(())
}

async fn kinds(locks: &LockManager, ttl: Duration, wait: Duration) -> Result<(), Error> {
    // docs: kinds
    let reader = locks.lock(Resource::shared("report"), ttl, wait).await?; // many at once
    let permit = locks
        .lock(Resource::semaphore("pool", 4), ttl, wait)
        .await?; // at most 4
    assert_eq!(permit.kind(), LockKind::Semaphore { limit: 4 });
    // docs: end
    reader.release().await?;
    permit.release().await
}

async fn sets(locks: &LockManager, ttl: Duration, wait: Duration) -> Result<(), Error> {
    // docs: sets
    let accounts = LockSet::new(["acct:1", "acct:2"])?.shared("acct:2")?;
    let both = locks.lock_all(&accounts, ttl, wait).await?; // all or nothing, one token
    let token = both.token().await?; // committed on a majority, as a lock's
    assert_eq!(both.resources(), ["acct:1", "acct:2"]);
    both.release().await?;
    // docs: end
    let _ = token;
    Ok(())
}

fn tls() -> Result<LockManager, Error> {
    // docs: tls
    let tls = Tls::from_files(
        Some(Path::new("ca.crt")),
        Some(Path::new("client.crt")),
        Some(Path::new("client.key")),
    )?;
    let locks = LockManager::builder([
        "rediss://10.0.0.1:6380",
        "rediss://10.0.0.2:6380",
        "rediss://10.0.0.3:6380",
    ])
    .tls(tls)
    .username("locker")
    .password(std::env::var("DLOCK_PASSWORD").unwrap_or_default())
    .build()?;
    // docs: end
    Ok(locks)
}

fn cluster() -> Result<(LockManager, LockManager), Error> {
    // docs: cluster
    // One Redis Cluster, named by any of its nodes:
    let one = LockManager::new(["redis+cluster://127.0.0.1:7101"])?;
    // Several independent clusters (or clusters and masters) as the Redlock nodes:
    let several = LockManager::new([
        "redis+cluster://10.0.1.1:7000",
        "redis+cluster://10.0.2.1:7000",
        "redis+cluster://10.0.3.1:7000",
    ])?;
    // docs: end
    Ok((one, several))
}

fn write_with_token(token: u64) {
    println!("writing with token {token}");
}

async fn do_work(token: u64) -> u64 {
    token
}

fn main() {
    // Named, not run: this file is compiled for the docs' sake.
    let _ = (library, kinds, sets, tls, cluster);
}
