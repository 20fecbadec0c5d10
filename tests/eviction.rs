//! Eviction would silently drop held locks. While maxmemory is set with a policy that can evict
//! lock keys (every policy but noeviction: lock keys have TTLs, so volatile-* evicts them too),
//! new grants are refused with an error naming the policy, unless the operator accepts the risk
//! with `dlock.allow-eviction yes`. INFO shows which state the node is in.

use crate::common::*;

fn config_set(c: &mut Connection, name: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .exec(c)
        .unwrap();
}

fn guard(c: &mut Connection) -> String {
    let info: String = redis::cmd("INFO").arg("dlock").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("dlock_eviction_guard:"))
        .expect("dlock_eviction_guard")
        .trim()
        .to_string()
}

#[test]
fn grants_are_refused_while_the_policy_can_evict_lock_keys() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(guard(&mut c), "safe");
    acquire(&mut c, "held", "o", 60_000).unwrap();
    config_set(&mut c, "maxmemory", "100mb");
    assert_eq!(guard(&mut c), "safe", "noeviction is the default");
    for policy in [
        "allkeys-lru",
        "volatile-ttl",
        "allkeys-random",
        "volatile-lfu",
    ] {
        config_set(&mut c, "maxmemory-policy", policy);
        assert_eq!(guard(&mut c), "refusing", "{policy}");
        let error = error_of(&mut c, &["DLOCK.ACQUIRE", "new", "o", "1000"]);
        assert!(
            error.contains(&format!("maxmemory-policy {policy} can evict lock keys")),
            "{error}"
        );
        assert!(error.contains("dlock.allow-eviction yes"), "{error}");
        assert_eq!(status(&mut c, "new"), None);
        assert_eq!(
            acquire(&mut c, "held", "o", 60_000).map(|_| ()),
            Some(()),
            "a renewal is not a grant"
        );
        assert_eq!(extend(&mut c, "held", "o", 60_000), 1);
    }
    assert_eq!(info_field(&mut c, "eviction_refusals"), 4);
    config_set(&mut c, "dlock.allow-eviction", "yes");
    assert_eq!(guard(&mut c), "allowed");
    assert!(
        acquire(&mut c, "new", "o", 1_000).is_some(),
        "the operator accepted the risk"
    );
    config_set(&mut c, "dlock.allow-eviction", "no");
    config_set(&mut c, "maxmemory-policy", "noeviction");
    assert_eq!(guard(&mut c), "safe");
    assert!(acquire(&mut c, "other", "o", 1_000).is_some());
}

#[test]
fn an_evicting_policy_without_maxmemory_is_safe() {
    let server = Server::builder()
        .config("maxmemory-policy", "allkeys-lru")
        .start();
    let mut c = server.conn();
    assert_eq!(guard(&mut c), "safe", "no maxmemory, nothing is evicted");
    assert!(acquire(&mut c, "k", "o", 1_000).is_some());
}

/// With eviction accepted, a held lock with a waiter can be evicted. Eviction is a keyspace
/// event like DEL: the waiter is handed the lock at once, with a larger token, instead of
/// waiting out its timeout.
#[test]
fn an_evicted_lock_goes_to_its_first_waiter_at_once() {
    let server = Server::builder()
        .config("dlock.allow-eviction", "yes")
        .config("maxmemory-policy", "volatile-ttl")
        .start();
    let mut c = server.conn();
    let first = acquire(&mut c, "held", "o", 60_000).unwrap();
    let url = server.url();
    let waiter = std::thread::spawn(move || -> redis::RedisResult<_> {
        let mut w = redis::Client::open(url)?.get_connection()?;
        let started = std::time::Instant::now();
        let token: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
            .arg("held")
            .arg("w")
            .arg(60_000)
            .arg("WAIT")
            .arg(20_000)
            .query(&mut w)?;
        Ok((token, started.elapsed()))
    });
    eventually("the waiter is queued", 5_000, || {
        info_field(&mut c, "waiters") == 1
    });
    // volatile-ttl evicts keys with a TTL only: the lock key is the one there is.
    config_set(&mut c, "maxmemory", "1");
    let (token, waited) = waiter.join().unwrap().expect("the waiter's answer");
    config_set(&mut c, "maxmemory", "0");
    let token = token.expect("the waiter was granted the evicted lock");
    assert!(token > first, "token order: {token} after {first}");
    assert!(
        waited < std::time::Duration::from_secs(5),
        "handed over at the eviction, not at the wait's timeout: {waited:?}"
    );
    let stats: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(
        !stats.contains("evicted_keys:0\r"),
        "nothing was evicted:\n{stats}"
    );
}
