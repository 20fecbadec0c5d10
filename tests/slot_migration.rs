//! Atomic slot migration (Redis 8.4+ `CLUSTER MIGRATION IMPORT`, Valkey 9+ `CLUSTER
//! MIGRATESLOTS`) with locks and waiters in the slot: the migration is accepted, every lock
//! arrives with its owner, token and deadline, the target's counter covers every moved token,
//! each waiter parked on the source is answered `MOVED` to the target as the slot leaves (with
//! `WAIT n` and `WAIT 0`; on Redis with both trim methods), and a cancelled migration leaves
//! both sides as they were.
//!
//! They need the newest servers: `make compat` runs them there. On a server without atomic
//! slot migration (CI's Redis 7.0) each test says so on stderr and checks nothing.

use crate::common::*;

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dlock_testkit::{atomic_migration, AtomicMigration, Cluster, Ended};

const KEYS: usize = 20;

fn key(i: usize) -> String {
    format!("lk:{{a}}:{i}")
}

/// A cluster of 3 masters, or `None` (said on stderr) where the server cannot migrate slots
/// atomically.
fn cluster() -> Option<(Cluster, AtomicMigration)> {
    cluster_with_replicas(0)
}

fn cluster_with_replicas(replicas: usize) -> Option<(Cluster, AtomicMigration)> {
    let probe = Server::start();
    let Some(kind) = atomic_migration(&mut probe.conn()) else {
        eprintln!("skipped: this server has no atomic slot migration (Redis 8.4+, Valkey 9+)");
        return None;
    };
    drop(probe);
    let cluster = Cluster::start_with(3, replicas, &[("enable-debug-command", "yes")]);
    Some((cluster, kind))
}

/// `DLOCK.ACQUIRE key owner 120000 WAIT wait_ms` on `node` in a thread: the reply (an error's
/// text) and when it came.
fn park(node: &Server, key: &str, owner: &str, wait_ms: u64) -> JoinHandle<(String, Instant)> {
    let mut c = node.conn();
    let (key, owner) = (key.to_string(), owner.to_string());
    std::thread::spawn(move || {
        let reply: redis::RedisResult<Option<i64>> = redis::cmd("DLOCK.ACQUIRE")
            .arg(&key)
            .arg(&owner)
            .arg(120_000)
            .arg("WAIT")
            .arg(wait_ms)
            .query(&mut c);
        let text = match reply {
            Ok(token) => format!("{token:?}"),
            Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
        };
        (text, Instant::now())
    })
}

/// Holders on every key, their (owner, token, ttl), and the source and target nodes.
fn held_slot(cluster: &Cluster) -> (usize, usize, Vec<(String, i64, i64)>) {
    let source = cluster.master_for(&key(0));
    let target = (source + 1) % 3;
    let mut c = cluster.nodes[source].conn();
    let before = (0..KEYS)
        .map(|i| {
            acquire(&mut c, &key(i), "holder", 60_000).expect("granted");
            status(&mut c, &key(i))
                .map(|(o, t, ttl, _)| (o, t, ttl))
                .unwrap()
        })
        .collect();
    (source, target, before)
}

/// Every lock is on the target with its owner and token, its deadline kept, its key expiring
/// with it; the target's counter covers them and its next grant is larger.
fn assert_moved_intact(
    cluster: &Cluster,
    target: usize,
    before: &[(String, i64, i64)],
    elapsed: Duration,
) {
    let mut t = cluster.nodes[target].conn();
    for (i, (owner, token, ttl)) in before.iter().enumerate() {
        let (o, tk, now_ttl, _) = status(&mut t, &key(i)).expect("the lock is on the target");
        assert_eq!((&o, tk), (owner, *token), "{}", key(i));
        let slack = elapsed.as_millis() as i64 + 100;
        assert!(
            now_ttl <= *ttl && now_ttl >= ttl - slack,
            "{}: ttl {ttl} -> {now_ttl}",
            key(i)
        );
        assert!(
            (pttl(&mut t, &key(i)) - now_ttl).abs() <= 50,
            "{}: key TTL",
            key(i)
        );
    }
    let highest = before.iter().map(|b| b.1).max().unwrap();
    assert!(
        counter(&mut t) >= highest,
        "the target's counter covers every moved token"
    );
    assert_eq!(acquire(&mut t, &key(0), "other", 1_000), None, "still held");
    assert!(acquire(&mut t, "lk:{a}:fresh", "other", 1_000).unwrap() > highest);
}

fn waiters_are_redirected_as_the_slot_leaves(trim: Option<&str>) {
    let Some((cluster, kind)) = cluster() else {
        return;
    };
    let (source, target, before) = held_slot(&cluster);
    let src = &cluster.nodes[source];
    let mut s = src.conn();
    if let (AtomicMigration::Redis, Some(method)) = (kind, trim) {
        redis::cmd("DEBUG")
            .arg("ASM-TRIM-METHOD")
            .arg(method)
            .arg(0)
            .exec(&mut s)
            .unwrap();
    }
    let waiting = park(src, &key(3), "waiter-n", 15_000);
    let forever = park(src, &key(4), "waiter-0", 0);
    eventually("both waiters queued", 5_000, || {
        info_field(&mut s, "waiters") == 2
    });

    let started = Instant::now();
    let migration = cluster.start_atomic_migration(kind, cluster.slot(&key(0)), source, target);
    let (ended, completed) = cluster.wait_atomic_migration(&migration, Duration::from_secs(20));
    assert_eq!(ended, Ended::Completed);

    let redirect = format!(
        "MOVED {} 127.0.0.1:{}",
        cluster.slot(&key(0)),
        cluster.nodes[target].port()
    );
    for waiter in [waiting, forever] {
        let (reply, answered) = waiter.join().unwrap();
        assert_eq!(reply, redirect);
        let late = answered.saturating_duration_since(completed);
        assert!(
            late <= Duration::from_millis(100),
            "answered {late:?} after the slot left"
        );
    }
    assert_eq!(
        info_field(&mut s, "waiters"),
        0,
        "no waiter left on the source"
    );
    assert_moved_intact(&cluster, target, &before, started.elapsed());
    eventually("the source trimmed the slot", 5_000, || {
        redis::cmd("DBSIZE").query::<i64>(&mut s).unwrap() == 0
    });

    // The redirected waiter queues on the target and gets the lock in its turn.
    let mut t = cluster.nodes[target].conn();
    let requeued = park(&cluster.nodes[target], &key(3), "waiter-n", 5_000);
    eventually("queued on the target", 5_000, || {
        info_field(&mut t, "waiters") == 1
    });
    assert_eq!(release(&mut t, &key(3), "holder"), 1);
    let (reply, _) = requeued.join().unwrap();
    let token: i64 = reply
        .trim_start_matches("Some(")
        .trim_end_matches(')')
        .parse()
        .unwrap();
    assert!(
        token > before[3].1,
        "granted on the target with a larger token: {reply}"
    );
}

#[test]
fn waiters_on_the_source_are_redirected_and_locks_arrive_intact_active_trim() {
    waiters_are_redirected_as_the_slot_leaves(Some("active"));
}

#[test]
fn waiters_on_the_source_are_redirected_and_locks_arrive_intact_background_trim() {
    // Valkey has one trim method; there this repeats the test above.
    waiters_are_redirected_as_the_slot_leaves(Some("bg"));
}

#[test]
fn a_cancelled_migration_leaves_both_sides_as_they_were() {
    let Some((cluster, kind)) = cluster() else {
        return;
    };
    let (source, target, before) = held_slot(&cluster);
    let slot = cluster.slot(&key(0));
    let src = &cluster.nodes[source];
    let mut s = src.conn();
    let waiting = park(src, &key(3), "waiter", 15_000);
    eventually("the waiter queued", 5_000, || {
        info_field(&mut s, "waiters") == 1
    });
    // Frozen, the node the migration needs cannot let it finish before it is cancelled.
    let frozen = match kind {
        AtomicMigration::Redis => source,
        AtomicMigration::Valkey => target,
    };
    cluster.nodes[frozen].pause();
    let migration = cluster.start_atomic_migration(kind, slot, source, target);
    cluster.cancel_atomic_migration(&migration);
    cluster.nodes[frozen].resume();
    let (ended, _) = cluster.wait_atomic_migration(&migration, Duration::from_secs(20));
    assert_eq!(ended, Ended::Cancelled);

    for (i, (owner, token, _)) in before.iter().enumerate() {
        let (o, t, _, _) = status(&mut s, &key(i)).expect("still on the source");
        assert_eq!((&o, t), (owner, *token));
    }
    let mut t = cluster.nodes[target].conn();
    eventually("the target holds nothing of the slot", 5_000, || {
        redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(slot)
            .query::<i64>(&mut t)
            .unwrap()
            == 0
    });
    assert_eq!(
        info_field(&mut s, "waiters"),
        1,
        "the waiter still waits on the source"
    );
    assert_eq!(release(&mut s, &key(3), "holder"), 1);
    let (reply, _) = waiting.join().unwrap();
    assert!(reply.starts_with("Some("), "granted on the source: {reply}");
}

#[test]
fn a_failover_of_the_source_mid_migration_leaves_both_sides_consistent() {
    let Some((cluster, kind)) = cluster_with_replicas(1) else {
        return;
    };
    let (source, target, before) = held_slot(&cluster);
    let slot = cluster.slot(&key(0));
    let replica = cluster.replica_of(source);
    let mut r = cluster.nodes[replica].conn();
    sync(&mut cluster.nodes[source].conn()); // the replica has every lock before the failover
                                             // Frozen, the node the migration needs cannot let it finish; meanwhile the source's replica
                                             // takes over by force, as after the loss of the source.
    let frozen = match kind {
        AtomicMigration::Redis => source,
        AtomicMigration::Valkey => target,
    };
    cluster.nodes[frozen].pause();
    let migration = cluster.start_atomic_migration(kind, slot, source, target);
    redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .arg("FORCE")
        .exec(&mut r)
        .unwrap();
    eventually("the replica promoted", 10_000, || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
        info.contains("role:master")
    });
    cluster.nodes[frozen].resume();
    // The migration either gives up or (Redis) resumes from the new owner of the slot: either
    // way the locks are whole on whichever node owns the slot afterwards, and nowhere else.
    let (ended, _) = cluster.wait_atomic_migration(&migration, Duration::from_secs(30));
    cluster.wait_ok();
    let owner = cluster.master_for(&key(0));
    let expected_owner = if ended == Ended::Completed {
        target
    } else {
        replica
    };
    assert_eq!(
        owner, expected_owner,
        "the slot's owner after a migration that {ended:?}"
    );
    let mut o = cluster.nodes[owner].conn();
    for (i, (holder, token, _)) in before.iter().enumerate() {
        let (h, t, _, _) = status(&mut o, &key(i)).expect("on the slot's owner");
        assert_eq!((&h, t), (holder, *token), "{}", key(i));
    }
    let highest = before.iter().map(|b| b.1).max().unwrap();
    assert!(acquire(&mut o, "lk:{a}:fresh", "other", 1_000).unwrap() > highest);
    let other = if owner == target { replica } else { target };
    let mut c = cluster.nodes[other].conn();
    eventually("no copy of the slot on the other side", 10_000, || {
        let role: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap();
        role.contains("role:slave")
            || redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(slot)
                .query::<i64>(&mut c)
                .unwrap()
                == 0
    });
}

/// A gate moves with its slot, by MIGRATE (`redis-cli --cluster reshard`'s way, every server)
/// and by an atomic migration (where the servers have one): on the target it stands at least
/// where it stood, the target's counter covers it, a stale GUARD there is refused and the
/// target's own next grant passes it.
#[test]
fn a_gate_moves_with_its_slot() {
    let cluster = Cluster::start_with(3, 0, &[("enable-debug-command", "yes")]);
    let kind = atomic_migration(&mut cluster.nodes[0].conn());
    for (gate, atomic) in [("{a}:gate", false), ("{b}:gate", true)] {
        if atomic && kind.is_none() {
            eprintln!("skipped the atomic half: no atomic slot migration on this server");
            continue;
        }
        let source = cluster.master_for(gate);
        let target = (source + 1) % 3;
        let mut s = cluster.nodes[source].conn();
        // A token of the node's clock; a wrapped DEL leaves only the gate in the slot.
        let token = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let data = gate.replace("gate", "data");
        redis::cmd("DLOCK.GUARD")
            .arg(gate)
            .arg(token)
            .arg(&["DEL", &data])
            .exec(&mut s)
            .unwrap();
        match (atomic, kind) {
            (true, Some(kind)) => {
                let started =
                    cluster.start_atomic_migration(kind, cluster.slot(gate), source, target);
                let (ended, _) = cluster.wait_atomic_migration(&started, Duration::from_secs(20));
                assert_eq!(ended, Ended::Completed);
            }
            _ => cluster.migrate_slot(gate, source, target, || {}), // the gate's key only
        }
        let mut t = cluster.nodes[target].conn();
        assert!(
            gate_token(&mut t, gate) >= token,
            "{gate}: the gate on the target"
        );
        assert!(
            counter(&mut t) as u64 >= gate_token(&mut t, gate),
            "{gate}: the target's counter"
        );
        let stale = redis::cmd("DLOCK.GUARD")
            .arg(gate)
            .arg(token - 1)
            .arg(&["SET", &data, "stale"])
            .exec(&mut t)
            .unwrap_err();
        assert_eq!(stale.code(), Some("STALE"), "{gate}: {stale}");
        let fresh = acquire(&mut t, &gate.replace("gate", "lock"), "o", 60_000).unwrap();
        let written: Value = redis::cmd("DLOCK.GUARD")
            .arg(gate)
            .arg(fresh)
            .arg(&["SET", &data, "fresh"])
            .query(&mut t)
            .unwrap();
        assert_eq!(
            written,
            Value::Okay,
            "{gate}: the target's own next grant passes"
        );
    }
}
