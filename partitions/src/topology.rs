//! How the lock's nodes are deployed on the hosts: five independent masters (Redlock), one
//! Sentinel-managed master with two replicas (a sentinel next to each data node, as on three
//! machines), which the clients reach as one `redis+sentinel://` node, or a Redis Cluster of
//! 3 masters and 3 replicas reached as one `redis+cluster://` node (topology_cluster.rs).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::net::{Host, Net};
use crate::nodes::{control_conn, Node, NodeConfig, PORT};
use crate::worker::RESOURCE;

pub const MASTER_NAME: &str = "dlpmaster";
const SENTINEL_PORT: u16 = 26379;

#[derive(Clone, Copy, Debug)]
pub enum Topology {
    /// Five masters, a grant on three of them is a grant.
    Redlock,
    /// A master and two replicas watched by three sentinels; `replicas`: the replica
    /// acknowledgement each grant waits for (0: none).
    Sentinel { replicas: u32 },
    /// Redis Cluster, 3 masters and 1 replica each; `replicas` as for Sentinel.
    Cluster { replicas: u32 },
}

impl Topology {
    pub fn data_nodes(self) -> usize {
        match self {
            Topology::Redlock => 5,
            Topology::Sentinel { .. } => 3,
            Topology::Cluster { .. } => 6,
        }
    }

    pub fn replicas(self) -> u32 {
        match self {
            Topology::Redlock => 0,
            Topology::Sentinel { replicas } | Topology::Cluster { replicas } => replicas,
        }
    }
}

/// The running nodes (and sentinels) and the URLs the clients are given.
pub struct Deployment {
    pub nodes: Vec<Node>,
    pub sentinels: Vec<Sentinel>,
    pub urls: Vec<String>,
    /// Each client is given one of `urls` (its own cluster seed) rather than all of them.
    pub one_each: bool,
}

impl Deployment {
    /// The URLs client `id` is given. A sentinel URL lists the client's "own" sentinel first
    /// (c1 the one beside n1, c2 beside n2, ...), as a deployment with a local sentinel would;
    /// even so the majority side's clients found no master during the isolation
    /// (docs/safety/partitions-results.md, the availability finding).
    pub fn urls_for(&self, id: u32) -> Vec<String> {
        let index = (id as usize).saturating_sub(1);
        if self.one_each {
            return self
                .urls
                .get(index % self.urls.len().max(1))
                .cloned()
                .into_iter()
                .collect();
        }
        if self.sentinels.is_empty() {
            return self.urls.clone();
        }
        let mut addrs: Vec<String> = self.sentinels.iter().map(|s| s.address()).collect();
        let first = index % addrs.len().max(1);
        addrs.rotate_left(first);
        vec![format!(
            "redis+sentinel://{}/{MASTER_NAME}",
            addrs.join(",")
        )]
    }
}

pub fn deploy(t: Topology, net: &Net, config: &NodeConfig) -> Result<Deployment, String> {
    let hosts: Vec<&Host> = (1..=t.data_nodes())
        .map(|i| net.host(&format!("n{i}")))
        .collect();
    match t {
        Topology::Redlock => {
            let nodes = hosts
                .iter()
                .map(|h| Node::start(h, config.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let urls = nodes.iter().map(Node::url).collect();
            Ok(Deployment {
                nodes,
                sentinels: Vec::new(),
                urls,
                one_each: false,
            })
        }
        Topology::Sentinel { .. } => sentinel_set(&hosts, config),
        Topology::Cluster { .. } => crate::topology_cluster::deploy(&hosts, config, RESOURCE),
    }
}

fn sentinel_set(hosts: &[&Host], config: &NodeConfig) -> Result<Deployment, String> {
    let master = &hosts[0].addr;
    let mut nodes = vec![Node::start(hosts[0], config.clone())?];
    for h in &hosts[1..] {
        let mut c = config.clone();
        c.extra
            .push(("replicaof".into(), format!("{master} {PORT}")));
        nodes.push(Node::start(h, c)?);
    }
    let sentinels = hosts
        .iter()
        .map(|h| Sentinel::start(h, master))
        .collect::<Result<Vec<_>, _>>()?;
    let addrs: Vec<String> = hosts
        .iter()
        .map(|h| format!("{}:{SENTINEL_PORT}", h.addr))
        .collect();
    let urls = vec![format!(
        "redis+sentinel://{}/{MASTER_NAME}",
        addrs.join(",")
    )];
    let set = Deployment {
        nodes,
        sentinels,
        urls,
        one_each: false,
    };
    wait(Duration::from_secs(30), || set.settled(master))?;
    Ok(set)
}

fn wait(within: Duration, check: impl Fn() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while !check() {
        if Instant::now() > deadline {
            return Err("the sentinel set did not settle within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

impl Deployment {
    /// Both replicas in sync and every sentinel naming the master and knowing two replicas.
    fn settled(&self, master: &str) -> bool {
        let info = query::<String>(&self.nodes[0].url(), &["INFO", "replication"]);
        let synced = info.is_some_and(|i| i.contains("connected_slaves:2"));
        synced
            && self.sentinels.iter().all(|s| {
                let named = query::<(String, u16)>(
                    &s.url(),
                    &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME],
                );
                let replicas =
                    query::<Vec<redis::Value>>(&s.url(), &["SENTINEL", "REPLICAS", MASTER_NAME]);
                named.is_some_and(|(a, _)| a == master) && replicas.is_some_and(|r| r.len() == 2)
            })
    }
}

fn query<T: redis::FromRedisValue>(url: &str, args: &[&str]) -> Option<T> {
    let mut c = control_conn(url).ok()?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut c).ok()
}

/// A Redis Sentinel in a host's namespace (no module), on its own config file.
pub struct Sentinel {
    host: Host,
    _dir: tempfile::TempDir,
    child: Child,
}

impl Sentinel {
    fn start(host: &Host, master: &str) -> Result<Sentinel, String> {
        let dir = tempfile::Builder::new()
            .prefix("dlp-sentinel-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let conf = dir.path().join("sentinel.conf");
        // A failover within seconds of the master's isolation, not minutes.
        let text = format!(
            "sentinel monitor {MASTER_NAME} {master} {PORT} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
             sentinel failover-timeout {MASTER_NAME} 3000\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n"
        );
        std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &host.ns])
            .arg(dlock_testkit::server_binary())
            .arg(&conf)
            .arg("--sentinel")
            .args(["--port", &SENTINEL_PORT.to_string(), "--bind", &host.addr])
            .arg("--dir")
            .arg(dir.path())
            .args(["--logfile", "sentinel.log", "--protected-mode", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("sentinel on {}: {e}", host.name))?;
        Ok(Sentinel {
            host: host.clone(),
            _dir: dir,
            child,
        })
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.address())
    }

    fn address(&self) -> String {
        format!("{}:{SENTINEL_PORT}", self.host.addr)
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
