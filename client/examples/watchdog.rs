//! `with_lock`: work that runs longer than the lock's TTL, kept held by the watchdog (it extends
//! every ttl / 3), and the loss signal that tells the work to stop: here `max_hold` fires it,
//! as a failed extension (nodes down, a partition) would.
//!
//! ```sh
//! make run        # a Redis with the module on 127.0.0.1:6379, in another shell
//! cargo run --release --example watchdog -p dlock-client
//! ```

use std::time::{Duration, Instant};

use dlock_client::{Error, LockContext, LockManager};

const RESOURCE: &str = "nightly-report";
const TTL: Duration = Duration::from_secs(1);
/// The longest the watchdog keeps extending; past it the loss signal fires.
const MAX_HOLD: Duration = Duration::from_secs(3);
const STEP: Duration = Duration::from_millis(500);

/// The node URLs: `DLOCK_NODES` (comma-separated), else `default`.
fn node_urls(default: &str) -> Vec<String> {
    let list = std::env::var("DLOCK_NODES").unwrap_or_else(|_| default.to_string());
    list.split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(String::from)
        .collect()
}

/// Work in steps of [`STEP`], `steps` of them or until the lock is lost, whichever comes first.
/// Returns the steps done.
async fn work(lock: LockContext, steps: u32, started: Instant) -> u32 {
    for step in 1..=steps {
        tokio::select! {
            _ = lock.lost() => {
                println!(
                    "  {:>4} ms: lock lost, stopping after {} steps",
                    started.elapsed().as_millis(),
                    step - 1
                );
                return step - 1;
            }
            _ = tokio::time::sleep(STEP) => {}
        }
        // A real job would write to the protected resource here, with this token.
        let Ok(token) = lock.token().await else {
            return step - 1; // its commit failed: the lock is lost
        };
        println!(
            "  {:>4} ms: step {step} done under token {token}",
            started.elapsed().as_millis(),
        );
    }
    steps
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let locks = LockManager::builder(node_urls("redis://127.0.0.1:6379"))
        .max_hold(Some(MAX_HOLD))
        .build()?;
    let wait = Duration::from_secs(5);

    let steps = 4;
    println!(
        "{} ms of work under a {} ms TTL:",
        (STEP * steps).as_millis(),
        TTL.as_millis()
    );
    let started = Instant::now();
    let done = locks
        .with_lock(RESOURCE, TTL, wait, |lock| work(lock, steps, started))
        .await?;
    println!(
        "with_lock: Ok({done} steps), extended past its TTL while the work ran, then released"
    );

    println!(
        "work that does not finish (the watchdog stops at max_hold, {} ms):",
        MAX_HOLD.as_millis()
    );
    let started = Instant::now();
    match locks
        .with_lock(RESOURCE, TTL, wait, |lock| work(lock, u32::MAX, started))
        .await
    {
        // LockLost instead of the work's output: part of the work may have run unprotected.
        Err(lost @ Error::LockLost { .. }) => println!("with_lock: Err({lost})"),
        Err(e) => return Err(e.into()),
        Ok(steps) => return Err(format!("kept past max_hold ({steps} steps)").into()),
    }
    Ok(())
}
