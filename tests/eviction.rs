//! Eviction would silently drop held locks. While maxmemory is set with a policy that can evict
//! lock keys (every policy but noeviction: lock keys have TTLs, so volatile-* evicts them too),
//! new grants are refused with an error naming the policy, unless the operator accepts the risk
//! with `dlock.allow-eviction yes`. INFO shows which state the node is in.

mod common;
use common::*;

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
