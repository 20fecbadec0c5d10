//! Scenario 6: uncontended acquire+release through a Redis Cluster (3 masters, 1 replica each),
//! with and without replica acknowledgement, next to a single master with and without a replica
//! acknowledging, and one master reached over plain TCP and over mutual TLS (the same server, so
//! the ratio is what TLS costs). Every contender runs the same keys each round (so the same
//! slots), each key released before the next, in alternating order round by round.

use std::time::{Duration, Instant};

use dlock_client::{LockManager, ReplicaAck, Tls};
use dlock_testkit::{Certificates, Cluster, Server};

use crate::contenders::Contender;
use crate::report::LatencyTable;
use crate::Plan;

/// The reference row: the master that has a replica attached, without acknowledgement.
pub const BASELINE: &str = "1 master";
/// The same TLS-enabled master, over plain TCP and over mutual TLS.
pub const PLAIN: &str = "1 master (no replica), plain TCP";
pub const TLS: &str = "1 master (no replica), mutual TLS";

/// The servers the scenario runs against, started before the measuring begins.
pub struct Setup {
    _cluster: Cluster,
    _master: Server,
    _replica: Server,
    _tls_master: Server,
    _certificates: Certificates,
    contenders: Vec<(&'static str, Contender)>,
}

const ACK: ReplicaAck = ReplicaAck::Replicas {
    count: 1,
    timeout: Duration::from_millis(100),
};

impl Setup {
    /// A 3x1 cluster, and a master with one replica (in sync when this returns).
    pub fn start() -> Setup {
        let cluster = Cluster::start(3, 1);
        let cluster_node = [format!(
            "redis+cluster://127.0.0.1:{}",
            cluster.nodes[0].port()
        )];
        let master = Server::start();
        let replica = Server::builder()
            .config("replicaof", &format!("127.0.0.1 {}", master.port()))
            .start();
        wait_for_link(&replica);
        let single = [master.url()];
        let certificates = Certificates::new();
        let (builder, tls_port) = Server::builder().tls(&certificates);
        let tls_master = builder.start();
        let tls = Tls::from_files(
            Some(&certificates.path("ca.crt")),
            Some(&certificates.path("client.crt")),
            Some(&certificates.path("client.key")),
        )
        .expect("test certificates");
        let over_tls = LockManager::builder([format!("rediss://127.0.0.1:{tls_port}")])
            .tls(tls)
            .build()
            .expect("dlock manager over TLS");
        let contenders = vec![
            (BASELINE, dlock(&single, ReplicaAck::Off)),
            ("1 master + replica, ack 1", dlock(&single, ACK)),
            ("cluster, ack off", dlock(&cluster_node, ReplicaAck::Off)),
            (
                "cluster, ack 1 (default)",
                dlock(&cluster_node, ReplicaAck::default()),
            ),
            (PLAIN, dlock(&[tls_master.url()], ReplicaAck::Off)),
            (TLS, Contender::Dlock(over_tls)),
        ];
        Setup {
            _cluster: cluster,
            _master: master,
            _replica: replica,
            _tls_master: tls_master,
            _certificates: certificates,
            contenders,
        }
    }

    /// Measures `plan.n` cycles per contender per round; the order rotates every round.
    pub async fn latency(&self, plan: &Plan) -> LatencyTable {
        let mut table = LatencyTable::default();
        let count = self.contenders.len();
        for round in 0..plan.rounds {
            for turn in 0..count {
                let (name, contender) = &self.contenders[(round + turn) % count];
                let mut samples = Vec::with_capacity(plan.n);
                for i in 0..plan.n {
                    let t = Instant::now();
                    contender
                        .cycle(&format!("cl:{round}:{i}"))
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    samples.push(t.elapsed().as_micros() as f64);
                }
                eprintln!(
                    "bench: [6. cluster] round {}/{} {name}: p50 {:.0} µs",
                    round + 1,
                    plan.rounds,
                    crate::median(samples.clone())
                );
                table.add(name, samples);
            }
        }
        table
    }
}

fn dlock(nodes: &[String], ack: ReplicaAck) -> Contender {
    let manager = LockManager::builder(nodes)
        .replica_ack(ack)
        .build()
        .expect("dlock manager");
    Contender::Dlock(manager)
}

fn wait_for_link(replica: &Server) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut replica.conn())
            .unwrap_or_default();
        if info.contains("master_link_status:up") {
            return;
        }
        assert!(Instant::now() < deadline, "replica link not up within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}
