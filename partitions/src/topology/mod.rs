//! Where the lock's nodes run: hosts made of network namespaces on a bridge (net.rs), real
//! `redis-server` processes in them (nodes.rs, their wall clocks movable through clock.rs), and
//! the three deployments of those nodes: five independent masters (Redlock), a Sentinel-managed
//! master with two replicas (sentinel.rs) reached as one `redis+sentinel://` node, or a Redis
//! Cluster of 3 masters and 3 replicas (cluster.rs) reached as one `redis+cluster://` node.
//! This file only chooses among them and says which URLs each client is given.

pub mod clock;
pub mod cluster;
pub mod net;
pub mod nodes;
pub mod sentinel;

use crate::names::RESOURCE;
use crate::topology::net::{Host, Net};
use crate::topology::nodes::{Node, NodeConfig};
use crate::topology::sentinel::Sentinel;

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
        vec![sentinel::url(&self.sentinels, index)]
    }
}

pub fn deploy(t: Topology, net: &Net, config: &NodeConfig) -> Result<Deployment, String> {
    let hosts: Vec<&Host> = (1..=t.data_nodes())
        .map(|i| net.host(&format!("n{i}")))
        .collect();
    let plain = |nodes: Vec<Node>, urls, one_each| Deployment {
        nodes,
        sentinels: Vec::new(),
        urls,
        one_each,
    };
    match t {
        Topology::Redlock => {
            let nodes = hosts
                .iter()
                .map(|h| Node::start(h, config.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let urls = nodes.iter().map(Node::url).collect();
            Ok(plain(nodes, urls, false))
        }
        Topology::Sentinel { .. } => {
            let (nodes, sentinels) = sentinel::deploy(&hosts, config)?;
            let urls = vec![sentinel::url(&sentinels, 0)];
            Ok(Deployment {
                sentinels,
                ..plain(nodes, urls, false)
            })
        }
        Topology::Cluster { .. } => {
            let (nodes, urls) = cluster::deploy(&hosts, config, RESOURCE)?;
            Ok(plain(nodes, urls, true))
        }
    }
}
