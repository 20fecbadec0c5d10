//! A real Redis Cluster of module-loaded servers: masters and replicas started as [`Server`]s
//! with `cluster-enabled yes`, joined by `redis-cli --cluster create`, as an operator does it.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::Server;

/// A client port whose cluster bus port (+10000) was free a moment ago too.
fn cluster_port() -> u16 {
    loop {
        let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
            continue;
        };
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        drop(listener);
        // Ephemeral ports are above 32768, and port + 10000 must exist: fold into 20000-29999
        // (bus 30000-39999), a pseudo-random pick checked by binding both below.
        let port = 20_000 + port % 10_000;
        let (client, bus) = (
            TcpListener::bind(("127.0.0.1", port)),
            TcpListener::bind(("127.0.0.1", port + 10_000)),
        );
        if client.is_ok() && bus.is_ok() {
            return port;
        }
    }
}

/// Servers in a cluster; `nodes[..masters]` start as masters, the rest as their replicas.
pub struct Cluster {
    pub nodes: Vec<Server>,
    masters: usize,
}

impl Cluster {
    /// `masters` masters with `replicas` replicas each; returns once every node sees the
    /// cluster as ok and every replica is in sync.
    pub fn start(masters: usize, replicas: usize) -> Cluster {
        Cluster::start_with(masters, replicas, &[])
    }

    /// [`Cluster::start`] with `config` (name, value pairs) given to every node.
    pub fn start_with(masters: usize, replicas: usize, config: &[(&str, &str)]) -> Cluster {
        let nodes: Vec<Server> = (0..masters * (1 + replicas))
            .map(|_| {
                let builder = Server::builder()
                    .port(cluster_port())
                    .config("cluster-enabled", "yes")
                    .config("cluster-config-file", "nodes.conf")
                    .config("cluster-node-timeout", "1000");
                config
                    .iter()
                    .fold(builder, |b, (name, value)| b.config(name, value))
                    .start()
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create (redis-tools)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster { nodes, masters };
        cluster.wait_ok();
        cluster
    }

    /// Waits until every running node reports `cluster_state:ok` and agrees on who serves
    /// every slot, and every replica's link to its master is up.
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.all_ok() {
            assert!(Instant::now() < deadline, "cluster not ok within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn all_ok(&self) -> bool {
        self.all_healthy() && self.all_agree()
    }

    fn all_healthy(&self) -> bool {
        self.nodes.iter().filter(|n| n.pid().is_some()).all(|n| {
            let Ok(mut c) = redis::Client::open(n.url()).and_then(|c| c.get_connection()) else {
                return false;
            };
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut c)
                .unwrap_or_default();
            let repl: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut c)
                .unwrap_or_default();
            info.contains("cluster_state:ok")
                && info.contains("cluster_slots_ok:16384")
                && (repl.contains("role:master") || repl.contains("master_link_status:up"))
        })
    }

    /// True when every running node has the same view of the cluster: who is a master of which
    /// slots and who replicates whom. `cluster_state:ok` alone is not enough: right after
    /// `--cluster create` a master can still see a replica as a master and deny it a vote, and a
    /// manual failover then times out without promoting anyone.
    fn all_agree(&self) -> bool {
        let mut views = self.nodes.iter().filter(|n| n.pid().is_some()).map(|n| {
            redis::Client::open(n.url())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c))
                .map(|nodes| topology(&nodes))
                .ok()
        });
        match views.next() {
            None => true, // no node running: nothing to disagree
            Some(None) => false,
            Some(Some(first)) => views.all(|view| view.as_ref() == Some(&first)),
        }
    }

    /// The slot of `key`.
    pub fn slot(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.nodes[0].conn())
            .expect("CLUSTER KEYSLOT")
    }

    /// Index of the running master that serves `key`'s slot (by its own account).
    pub fn master_for(&self, key: &str) -> usize {
        let slot = self.slot(key);
        self.find(|c| {
            let role: String = redis::cmd("INFO")
                .arg("replication")
                .query(c)
                .unwrap_or_default();
            role.contains("role:master") && self.serves(c, slot)
        })
        .expect("a master serves the slot")
    }

    /// Index of a running replica of the master at `master`.
    pub fn replica_of(&self, master: usize) -> usize {
        let port = self.nodes[master].port();
        self.find(|c| {
            let repl: String = redis::cmd("INFO")
                .arg("replication")
                .query(c)
                .unwrap_or_default();
            repl.contains(&format!("master_port:{port}\r\n"))
        })
        .expect("a replica of that master")
    }

    fn find(&self, check: impl Fn(&mut redis::Connection) -> bool) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| {
            self.nodes[i].pid().is_some()
                && redis::Client::open(self.nodes[i].url())
                    .and_then(|c| c.get_connection())
                    .is_ok_and(|mut c| check(&mut c))
        })
    }

    /// Moves `key`'s slot from node `from` to node `to` the way `redis-cli --cluster reshard`
    /// does: importing, migrating, MIGRATE of the key, then the new owner announced to the
    /// masters the cluster started with. `before_announcing` runs between MIGRATE and the
    /// announcement.
    pub fn migrate_slot(
        &self,
        key: &str,
        from: usize,
        to: usize,
        before_announcing: impl FnOnce(),
    ) {
        let slot = self.slot(key).to_string();
        let (mut source, mut target) = (self.nodes[from].conn(), self.nodes[to].conn());
        let (source_id, target_id) = (node_id(&mut source), node_id(&mut target));
        let setslot = |c: &mut redis::Connection, state: &str, id: &str| {
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(&slot)
                .arg(state)
                .arg(id)
                .exec(c)
                .unwrap_or_else(|e| panic!("SETSLOT {state}: {e}"));
        };
        setslot(&mut target, "IMPORTING", &source_id);
        setslot(&mut source, "MIGRATING", &target_id);
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.nodes[to].port())
            .arg("")
            .arg(0)
            .arg(5_000)
            .arg("KEYS")
            .arg(key)
            .exec(&mut source)
            .expect("MIGRATE");
        before_announcing();
        for master in &self.nodes[..self.masters] {
            setslot(&mut master.conn(), "NODE", &target_id);
        }
        self.wait_ok();
    }

    /// True when the node behind `c` serves `slot` itself (its own `CLUSTER SHARDS` / `SLOTS`
    /// entry lists it as the master).
    fn serves(&self, c: &mut redis::Connection, slot: u16) -> bool {
        let myid: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query(c)
            .unwrap_or_default();
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(c)
            .unwrap_or_default();
        slots.iter().any(|range| {
            let redis::Value::Array(fields) = range else {
                return false;
            };
            let (Some(start), Some(end)) = (fields.first(), fields.get(1)) else {
                return false;
            };
            let start: i64 = redis::from_redis_value_ref(start).unwrap_or(-1);
            let end: i64 = redis::from_redis_value_ref(end).unwrap_or(-1);
            let master_id = match fields.get(2) {
                Some(redis::Value::Array(m)) => m
                    .get(2)
                    .and_then(|id| redis::from_redis_value_ref::<String>(id).ok())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            (start..=end).contains(&i64::from(slot)) && master_id == myid
        })
    }
}

/// The nodes a `CLUSTER NODES` answer sees alive, one line each: ID, role, master ID and the
/// slots served (a node's own importing/migrating marks left out: only it shows them).
fn topology(nodes: &str) -> BTreeSet<String> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = *fields.get(2)?;
            if flags.contains("fail") || flags.contains("handshake") || flags.contains("noaddr") {
                return None;
            }
            let role = if flags.contains("master") {
                "master"
            } else {
                "replica"
            };
            let slots = fields.iter().skip(8).filter(|s| !s.starts_with('['));
            let mut entry = format!("{} {role} {}", fields[0], fields.get(3)?);
            slots.for_each(|s| {
                entry.push(' ');
                entry.push_str(s);
            });
            Some(entry)
        })
        .collect()
}

/// The cluster node ID of the server behind `c`.
fn node_id(c: &mut redis::Connection) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(c)
        .expect("CLUSTER MYID")
}
