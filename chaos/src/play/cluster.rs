//! Scenarios 9 and 10: the workers lock through one `redis+cluster://` node of a real cluster
//! (3 masters, 1 replica each) while the shard serving the lock loses its replica link and then
//! its master, so the replica is promoted without the grants made in between, as after a
//! partition.
//!
//! Tokens are not floored by the wall clock here (`dlock.clock-floor no`): the floor would lift
//! the promoted replica's tokens past any lost grant's as long as clocks agree, which would hide
//! what replication alone does. With acknowledgement on, a grant counts only once the replica has
//! it, so the promoted replica knows every token handed out; with it off, grants made while the
//! link was down are lost and their tokens handed out again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dlock_client::ReplicaAck;
use dlock_testkit::{Cluster, Server};

use crate::checkers::figures::{judge_record, Figures};
use crate::fixture::resource::Resource;
use crate::scenario::Scenario;
use crate::workloads::connect::{manager, runtime};
use crate::workloads::workers::{run_workers, KEY};

pub fn run(sc: &Scenario, duration: Duration, ack: bool) -> Figures {
    let cluster = Cluster::start_with(3, 1, &[("dlock.clock-floor", "no")]);
    let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes[0].port());
    let replica_ack = if ack {
        ReplicaAck::default() // on for cluster nodes
    } else {
        ReplicaAck::Off
    };
    let resource = Arc::new(Resource::start());
    let deadline = Instant::now() + duration;
    let faults = std::thread::spawn(move || {
        let mut cluster = cluster;
        fail_over_until(&mut cluster, deadline);
        cluster // dropped (servers stopped) only after the workers are done
    });
    let manager = manager(&[url], replica_ack);
    runtime().block_on(run_workers(sc, manager, resource.clone(), deadline));
    drop(faults.join());
    judge_record(&resource.take())
}

/// Every round: cut the lock's shard's replica link, kill its master 200 ms later, wait for the
/// promotion, bring the old master back as a replica (a fresh process: the cut is gone).
fn fail_over_until(cluster: &mut Cluster, until: Instant) {
    while Instant::now() + Duration::from_secs(3) < until {
        std::thread::sleep(Duration::from_millis(1_500));
        let master = cluster.master_for(KEY);
        let replica = cluster.replica_of(master);
        cut_replica_link(&cluster.nodes[master]);
        std::thread::sleep(Duration::from_millis(200));
        cluster.nodes[master].kill();
        if !promoted(&cluster.nodes[replica], Duration::from_secs(15)) {
            eprintln!("chaos: the replica was not promoted within 15 s; no more failovers");
            return;
        }
        cluster.nodes[master].restart();
        cluster.wait_ok();
    }
}

/// The replica is disconnected and cannot resync: `PSYNC`/`SYNC` are denied to the user it
/// connects as, so it keeps retrying while the master goes on granting (a partition between the
/// two; a bare `CLIENT KILL` would be healed by an immediate reconnect and partial resync).
fn cut_replica_link(master: &Server) {
    let mut c = master.conn();
    let denied = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-psync")
        .arg("-sync")
        .exec(&mut c);
    let killed = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .exec(&mut c);
    if let Err(e) = denied.and(killed) {
        eprintln!("chaos: cutting the replica link failed: {e}");
    }
}

fn promoted(replica: &Server, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut replica.conn())
            .unwrap_or_default();
        if info.contains("role:master") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
