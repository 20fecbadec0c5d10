//! One lease for a guard, its watchdog and the work under it: the guard's validity follows the
//! watchdog's extensions, and a process that resumes past its renew deadline reads its lock as
//! lost at once, before the watchdog's task has had a chance to run (the lease-loss contract).

use crate::common::*;

use std::future::Future;
use std::time::Duration;

const SHORT: Duration = Duration::from_millis(300);

async fn bounded(test: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the test finished within 60 s");
}

#[tokio::test]
async fn the_guards_validity_follows_the_watchdogs_extensions() {
    bounded(async {
        let servers = nodes(1);
        let locks = manager(&servers);
        let guard = locks.try_lock("kept", SHORT).await.expect("granted");
        let watchdog = guard.watchdog(SHORT);
        tokio::time::sleep(SHORT * 3).await;
        assert!(!guard.is_lost(), "the watchdog keeps it");
        // Extended every 100 ms: what is left is most of a TTL, never zero.
        assert!(
            guard.validity() > SHORT / 3,
            "validity {:?} after 3 TTLs under the watchdog",
            guard.validity()
        );
        assert!(!watchdog.stop().await);
        guard.release().await.expect("released");
    })
    .await;
}

/// The runtime's one thread blocked past the renew deadline stands for a paused process: when
/// it resumes, the work's own task runs first, and must not read "not lost".
#[tokio::test]
async fn a_process_resumed_past_its_renew_deadline_reads_lost_at_once() {
    bounded(async {
        let servers = nodes(1);
        let locks = manager(&servers);
        let guard = locks.try_lock("paused", SHORT).await.expect("granted");
        let watchdog = guard.watchdog(SHORT);
        let context = watchdog.context();
        assert!(!context.is_lost());
        std::thread::sleep(SHORT * 2); // no other task runs meanwhile: not the watchdog either
        assert!(
            context.is_lost(),
            "past the renew deadline without an extension"
        );
        assert!(guard.is_lost());
        assert_eq!(guard.validity(), Duration::ZERO);
        assert!(watchdog.stop().await, "the watchdog reports the loss");
    })
    .await;
}
