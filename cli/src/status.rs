//! `dlock status`: each node's view of a resource.

use dlock_client::{Holders, LockManager};

use crate::{code_of, count, exit};

/// Each node's view; exit 4 when fewer than a majority answered (the view cannot say whether
/// the lock is held: nor could a lock be taken now).
pub async fn status(manager: &LockManager, resource: &str) -> u8 {
    let views = match manager.status(resource).await {
        Ok(views) => views,
        Err(e) => return code_of(&e),
    };
    let mut answered = 0;
    for node in &views {
        match &node.state {
            Ok(held) => {
                answered += 1;
                print_holders(&node.node, held);
            }
            Err(reason) => println!("{} unreachable: {reason}", node.node),
        }
    }
    let needed = views.len() / 2 + 1;
    if answered >= needed {
        return 0;
    }
    eprintln!(
        "dlock: {answered} of {} answered; a majority ({needed}) is needed to tell whether {resource:?} is held",
        count(views.len(), "node")
    );
    exit::NO_QUORUM
}

/// One line per holder: `NODE owner=.. token=.. ttl=..ms holds=..` (plus `mode=..` for a shared
/// lock's or semaphore's holders), or `NODE free`.
fn print_holders(node: &str, held: &Holders) {
    if held.holders.is_empty() {
        println!("{node} free");
    }
    let plain =
        held.limit.is_none() && held.holders.len() == 1 && held.holders[0].mode == "exclusive";
    for lock in &held.holders {
        let mode = match (plain, held.limit) {
            (true, _) => String::new(),
            (false, Some(limit)) => format!(" mode=permit limit={limit}"),
            (false, None) => format!(" mode={}", lock.mode),
        };
        println!(
            "{node} owner={} token={} ttl={}ms holds={}{mode}",
            lock.owner, lock.token, lock.ttl_ms, lock.holds
        );
    }
}
