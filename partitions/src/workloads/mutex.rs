//! The mutex workload (`dlock-partitions worker`, the default): over and over, take the lock,
//! run the critical section (section.rs: the guarded read, the hold, the guarded write), release.
//! Every operation is recorded as it happens (history.rs).

use std::time::{Duration, Instant};

use dlock_client::Resource;

use crate::names::RESOURCE;
use crate::workloads::args::WorkerArgs;
use crate::workloads::connect::{manager, register};
use crate::workloads::lock::{acquire, release};
use crate::workloads::section::{cas, Holder};

/// The loop of a mutex client process until its schedule ends.
pub async fn work(args: &WorkerArgs) -> Result<(), String> {
    let locks = manager(args)?;
    let mut data = register(&args.register).await?;
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let mut seq = 0u64;
    while Instant::now() < deadline {
        let resource = Resource::exclusive(RESOURCE);
        let Some(guard) = acquire(args, &locks, resource, (None, None)).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        seq += 1;
        let new = u64::from(args.id) * 1_000_000 + seq;
        cas(args, Holder::Lock(&guard), &mut data, new).await;
        release(args.id, guard).await;
    }
    Ok(())
}
