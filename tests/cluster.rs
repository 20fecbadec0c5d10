//! The module in a real Redis Cluster (3 masters + 3 replicas, made with `redis-cli --cluster
//! create`): commands route by their key, and failover and resharding keep locks with their
//! tokens and the token order.

use crate::common::*;

use std::time::Duration;

use dlock_testkit::Cluster;

const KEY: &str = "orders:42";

fn role(server: &Server) -> String {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut server.conn())
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Waits until the replica at `replica` is a master.
fn promoted(cluster: &Cluster, replica: usize) {
    eventually("the replica is promoted", 15_000, || {
        role(&cluster.nodes[replica]) == "master"
    });
    cluster.wait_ok();
}

/// `CLUSTER FAILOVER` on `replica` until it is a master. A manual failover the other masters
/// do not vote for in time is abandoned by the server after 5 s (`CLUSTER_MF_TIMEOUT`), and an
/// operator asks again: so does the test, up to 3 times.
fn manual_failover(cluster: &Cluster, replica: usize) {
    for _ in 0..3 {
        redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .exec(&mut cluster.nodes[replica].conn())
            .expect("CLUSTER FAILOVER");
        let deadline = std::time::Instant::now() + Duration::from_secs(7);
        while std::time::Instant::now() < deadline {
            if role(&cluster.nodes[replica]) == "master" {
                cluster.wait_ok();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("the replica was not promoted after 3 manual failovers");
}

/// `w2` waits for `KEY` on `server` (up to `wait_ms`) on a thread of its own; its answer.
fn wait_in_thread(
    server: &Server,
    wait_ms: u64,
) -> std::thread::JoinHandle<redis::RedisResult<Option<i64>>> {
    let url = server.url();
    std::thread::spawn(move || {
        let mut c = redis::Client::open(url)?.get_connection()?;
        redis::cmd("DLOCK.ACQUIRE")
            .arg(KEY)
            .arg("w2")
            .arg(60_000)
            .arg("WAIT")
            .arg(wait_ms)
            .query(&mut c)
    })
}

/// Holds `KEY` as `w1` on its master and makes sure the replica has it; (master, token).
fn held_and_replicated(cluster: &Cluster) -> (usize, i64) {
    let master = cluster.master_for(KEY);
    let mut c = cluster.nodes[master].conn();
    let token = acquire(&mut c, KEY, "w1", 60_000).expect("granted");
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5_000).query(&mut c).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged the grant");
    (master, token)
}

/// After a failover: the promoted node holds the same lock, and its next grant for the key is
/// larger than any before.
fn check_after_failover(cluster: &Cluster, promoted: usize, token: i64) {
    let mut c = cluster.nodes[promoted].conn();
    let (owner, kept, _, _) = status(&mut c, KEY).expect("still held after the failover");
    assert_eq!((owner.as_str(), kept), ("w1", token));
    assert_eq!(release(&mut c, KEY, "w1"), 1);
    let next = acquire(&mut c, KEY, "w2", 60_000).expect("granted");
    assert!(
        next > token,
        "token order across the failover: {next} after {token}"
    );
}

#[test]
fn keyed_commands_are_redirected_to_the_slot_owner() {
    let cluster = Cluster::start(3, 1);
    let master = cluster.master_for(KEY);
    let other = (0..3).find(|&i| i != master).unwrap();
    let port = cluster.nodes[master].port();
    let slot = cluster.slot(KEY);
    let mut c = cluster.nodes[other].conn();
    for args in [
        vec!["DLOCK.ACQUIRE", KEY, "w1", "1000"],
        vec!["DLOCK.ACQUIRE", KEY, "w1", "1000", "WAIT", "100"],
        vec!["DLOCK.RELEASE", KEY, "w1"],
        vec!["DLOCK.STATUS", KEY],
        vec!["DLOCK.WAITERS", KEY],
    ] {
        let error = error_of(&mut c, &args);
        assert_eq!(error, format!("MOVED {slot} 127.0.0.1:{port}"), "{args:?}");
    }
    assert!(acquire(&mut cluster.nodes[master].conn(), KEY, "w1", 1_000).is_some());
}

#[test]
fn cluster_failover_keeps_the_lock_and_the_token_order() {
    let cluster = Cluster::start(3, 1);
    let (master, token) = held_and_replicated(&cluster);
    let replica = cluster.replica_of(master);
    manual_failover(&cluster, replica);
    check_after_failover(&cluster, replica, token);
}

#[test]
fn a_forced_failover_after_the_master_dies_keeps_the_lock_and_the_token_order() {
    let mut cluster = Cluster::start(3, 1);
    let (master, token) = held_and_replicated(&cluster);
    let replica = cluster.replica_of(master);
    cluster.nodes[master].kill();
    promoted(&cluster, replica);
    check_after_failover(&cluster, replica, token);
}

#[test]
fn resharding_moves_a_held_lock_with_its_token_and_the_order_holds() {
    let cluster = Cluster::start(3, 1);
    let from = cluster.master_for(KEY);
    let to = (0..3).find(|&i| i != from).unwrap();
    let token = acquire(&mut cluster.nodes[from].conn(), KEY, "w1", 60_000).unwrap();
    cluster.migrate_slot(KEY, from, to, || {});
    assert_eq!(cluster.master_for(KEY), to);
    let mut c = cluster.nodes[to].conn();
    let (owner, kept, ttl, _) = status(&mut c, KEY).expect("held on the new owner");
    assert_eq!((owner.as_str(), kept), ("w1", token));
    assert!(ttl > 50_000, "the deadline travelled too: {ttl} ms left");
    assert_eq!(release(&mut c, KEY, "w1"), 1);
    let next = acquire(&mut c, KEY, "w2", 60_000).unwrap();
    assert!(
        next > token,
        "the new owner's next grant is larger: {next} after {token}"
    );
}

#[test]
fn a_waiter_on_the_old_owner_is_redirected_when_the_slot_moves_not_granted() {
    let cluster = Cluster::start(3, 1);
    let from = cluster.master_for(KEY);
    let to = (0..3).find(|&i| i != from).unwrap();
    let token = acquire(&mut cluster.nodes[from].conn(), KEY, "w1", 60_000).unwrap();
    let waiting = wait_in_thread(&cluster.nodes[from], 20_000);
    let mut source = cluster.nodes[from].conn();
    eventually("w2 queued", 5_000, || {
        status(&mut source, KEY).is_some_and(|_| info_field(&mut source, "waiters") == 1)
    });
    // The key leaves while the slot is migrating: the old owner must not grant it to w2.
    cluster.migrate_slot(KEY, from, to, || {
        std::thread::sleep(Duration::from_millis(300))
    });
    let answer = waiting.join().expect("waiter thread");
    let error = answer.expect_err("w2 must not be granted on a node that gave the lock away");
    let slot = cluster.slot(KEY);
    let ask = format!(
        "{} {}",
        error.code().unwrap_or_default(),
        error.detail().unwrap_or_default()
    );
    assert_eq!(
        ask,
        format!("ASK {slot} 127.0.0.1:{}", cluster.nodes[to].port()),
        "{error}"
    );
    let mut c = cluster.nodes[to].conn();
    let (owner, kept, _, _) = status(&mut c, KEY).expect("still held on the new owner");
    assert_eq!((owner.as_str(), kept), ("w1", token));
    let keys: i64 = redis::cmd("DBSIZE")
        .query(&mut cluster.nodes[from].conn())
        .unwrap();
    assert_eq!(keys, 0, "no second lock left behind on the old owner");
}

#[test]
fn a_release_hands_the_lock_to_the_next_waiter_on_a_stable_slot() {
    let cluster = Cluster::start(3, 1);
    let master = cluster.master_for(KEY);
    let mut c = cluster.nodes[master].conn();
    let first = acquire(&mut c, KEY, "w1", 60_000).unwrap();
    let waiting = wait_in_thread(&cluster.nodes[master], 10_000);
    eventually("w2 queued", 5_000, || info_field(&mut c, "waiters") == 1);
    assert_eq!(release(&mut c, KEY, "w1"), 1);
    let next = waiting.join().unwrap().expect("granted").expect("a token");
    assert!(next > first);
    assert_eq!(status(&mut c, KEY).map(|s| s.0), Some("w2".to_string()));
}

#[test]
fn a_guard_routes_by_its_gate_and_keys_and_refuses_keys_in_two_slots() {
    let cluster = Cluster::start(3, 0);
    let (gate, data, elsewhere) = ("{o}gate", "{o}data", "{p}data");
    let master = cluster.master_for(gate);
    let mut c = cluster.nodes[master].conn();
    let guard = |c: &mut Connection, key: &str| -> String {
        redis::cmd("DLOCK.GUARD")
            .arg(gate)
            .arg(5)
            .arg("SET")
            .arg(key)
            .arg("v")
            .query::<Value>(c)
            .map_or_else(|e| e.to_string(), |v| format!("{v:?}"))
    };
    assert_eq!(guard(&mut c, data), "ok");
    let cross = guard(&mut c, elsewhere);
    assert!(cross.to_uppercase().contains("CROSSSLOT"), "{cross}");
    let other = (0..3).find(|&i| i != master).unwrap();
    let moved = guard(&mut cluster.nodes[other].conn(), data);
    assert!(moved.to_uppercase().contains("MOVED"), "{moved}");
}

/// A set's keys are checked as a command's keys on every server (the getkeys API: before Redis
/// 8.6 a Cluster does not read a keynum key spec): keys of two slots answer CROSSSLOT, keys of
/// a slot served elsewhere MOVED — never a grant on a node that does not serve the slot.
#[test]
fn a_set_routes_by_its_keys_and_refuses_keys_in_two_slots() {
    let cluster = Cluster::start(3, 0);
    let (a, b, elsewhere) = ("{s}a", "{s}b", "{t}c");
    let master = cluster.master_for(a);
    let mut c = cluster.nodes[master].conn();
    let set = |c: &mut Connection, command: &str, keys: &[&str]| -> String {
        let mut cmd = redis::cmd(command);
        cmd.arg(keys.len()).arg(keys).arg("me");
        if command != "DLOCK.RELEASEALL" {
            cmd.arg(30_000);
        }
        cmd.query::<Value>(c)
            .map_or_else(|e| e.to_string(), |v| format!("{v:?}"))
    };
    for command in [
        "DLOCK.ACQUIREALL",
        "DLOCK.EXTENDALL",
        "DLOCK.FENCEALL",
        "DLOCK.RELEASEALL",
    ] {
        let cross = set(&mut c, command, &[a, elsewhere]);
        assert!(
            cross.to_uppercase().contains("CROSSSLOT"),
            "{command}: {cross}"
        );
    }
    let other = (0..3).find(|&i| i != master).unwrap();
    let moved = set(
        &mut cluster.nodes[other].conn(),
        "DLOCK.ACQUIREALL",
        &[a, b],
    );
    assert!(moved.to_uppercase().contains("MOVED"), "{moved}");
    assert!(
        set(&mut c, "DLOCK.ACQUIREALL", &[a, b]).starts_with("int("),
        "granted on its master"
    );
}
