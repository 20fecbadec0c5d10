//! conformance/errors.json against real servers: the class of each failure and the words of its
//! message (the same table the Python and Node clients and the CLI run).

use std::time::Duration;

use dlock_client::{Error, LockGuard, LockManager, Resource};
use dlock_testkit::{error_cases, ErrorCase, Setup};

fn resource(name: &str, kind: Option<u32>) -> Resource<'_> {
    match kind {
        Some(limit) => Resource::semaphore(name, limit),
        None => Resource::exclusive(name),
    }
}

/// What the case's call fails with (or how the manager refuses to be made).
async fn failure(case: &ErrorCase, setup: &Setup) -> Error {
    let mut builder = LockManager::builder(&setup.urls).timeout(case.timeout);
    if let Some(password) = &case.password {
        builder = builder.password(password);
    }
    let locks = match builder.build() {
        Ok(locks) => locks,
        Err(e) => return e,
    };
    let _held: Option<LockGuard> = match case.held {
        Some(kind) => {
            let other = LockManager::new([&setup.url]).expect("a manager");
            Some(
                other
                    .try_lock(resource(&case.resource, kind), Duration::from_secs(30))
                    .await
                    .expect("held first"),
            )
        }
        None => None,
    };
    let asked = resource(&case.resource, case.ask);
    let asked = match case.wait {
        None => locks.try_lock(asked, case.ttl).await,
        Some(wait) => locks.lock(asked, case.ttl, wait).await,
    };
    match asked {
        Ok(guard) => panic!("{}: taken by {}", case.situation, guard.owner()),
        Err(e) => e,
    }
}

fn class(error: &Error) -> &'static str {
    match error {
        Error::NoQuorum { .. } => "no_quorum",
        Error::InvalidArgument(_) => "invalid_argument",
        Error::Contended { .. } => "contended",
        Error::WrongKind { .. } => "wrong_kind",
        Error::ValidityExpired { .. } => "validity_expired",
        Error::LockLost { .. } => "lock_lost",
        Error::Stale { .. } => "stale",
        Error::Guarded { .. } => "guarded",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_says_the_same_about_each_failure() {
    let cases = error_cases();
    assert!(cases.len() >= 10, "the table has its cases");
    for case in cases {
        let Some(setup) = case.start() else {
            eprintln!("{}: skipped, this redis-server has no TLS", case.situation);
            continue;
        };
        let started = std::time::Instant::now();
        let error = tokio::time::timeout(Duration::from_secs(30), failure(&case, &setup))
            .await
            .unwrap_or_else(|_| panic!("{}: no answer within 30 s", case.situation));
        case.check_duration(started.elapsed());
        assert_eq!(class(&error), case.error, "{}: {error}", case.situation);
        case.check(&setup, &error.to_string());
    }
}
