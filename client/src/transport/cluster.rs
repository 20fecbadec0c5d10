//! One Redis Cluster as one quorum node: each request goes to the master serving its resource's
//! slot, following `MOVED` and `ASK`.
//!
//! The routing is done here rather than by redis-rs's cluster client because server-side waits
//! block the connection they are sent on: redis-rs multiplexes one connection per cluster node,
//! so one waiting client would stall every other request to that shard. Here each master is a
//! [`Server`], with its shared connection for quick requests and its pool of wait connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, Pipeline, Value};

use super::identity::Identity;
use super::server::{Failed, Server};
use super::slots::{key_slot, SlotMap};
use crate::connect::Connect;
use crate::errors::NodeFailure;

/// Redirects followed for one request before giving up (a slot moving twice in one call is
/// already rare).
const MAX_REDIRECTS: usize = 5;

pub struct Cluster {
    url: String,
    /// How to reach the seed; every master is reached the same way (user, password, TLS) at its
    /// own address.
    seed: ConnectionInfo,
    /// Every master is reached over TLS (`rediss+cluster://`), with these settings.
    tls: bool,
    connect: Connect,
    slots: RwLock<Option<SlotMap>>,
    masters: Mutex<HashMap<String, Arc<Server>>>,
    /// One topology refresh at a time; the others wait for its result.
    refreshing: tokio::sync::Mutex<()>,
    /// This quorum node's identity: each master claims its server with one of its own.
    identity: Identity,
}

/// How a request goes to one master.
#[derive(Clone, Copy)]
pub struct Bounds {
    /// Per connection attempt and per topology query.
    pub connect: Duration,
    /// The whole request, redirects included.
    pub whole: Duration,
    /// The request blocks on the server: use a connection of its own.
    pub blocking: bool,
}

impl Cluster {
    /// A cluster reached through `seed` (`tls`: every master over TLS), called `name` in
    /// errors, its masters' servers claimed for `identity`'s node; connects lazily, like a
    /// single server.
    pub fn new(
        name: &str,
        seed: ConnectionInfo,
        tls: bool,
        connect: &Connect,
        identity: Identity,
    ) -> Cluster {
        Cluster {
            url: name.to_string(),
            seed,
            tls,
            connect: connect.clone(),
            slots: RwLock::new(None),
            masters: Mutex::new(HashMap::new()),
            refreshing: tokio::sync::Mutex::new(()),
            identity,
        }
    }

    /// Sends `pipe` to the master serving `key`, following redirects, all within `bounds.whole`.
    pub async fn call(
        &self,
        key: &str,
        pipe: &Pipeline,
        bounds: Bounds,
    ) -> Result<Vec<Value>, NodeFailure> {
        match tokio::time::timeout(bounds.whole, self.route(key, pipe, bounds)).await {
            Ok(result) => result,
            Err(_) => Err(NodeFailure::no_reply(self.url.clone(), bounds.whole)),
        }
    }

    async fn route(
        &self,
        key: &str,
        pipe: &Pipeline,
        bounds: Bounds,
    ) -> Result<Vec<Value>, NodeFailure> {
        let mut master = self
            .master_for(key_slot(key.as_bytes()), bounds.connect)
            .await?;
        let mut asking = false;
        for _ in 0..=MAX_REDIRECTS {
            let with_asking_first;
            let sent = if asking {
                with_asking_first = with_asking(pipe);
                &with_asking_first
            } else {
                pipe
            };
            let reply = if bounds.blocking {
                master
                    .call_blocking(sent, bounds.connect, bounds.whole)
                    .await
            } else {
                master.call(sent, bounds.connect, bounds.whole).await
            };
            match reply {
                Ok(replies) => return Ok(replies.into_iter().skip(usize::from(asking)).collect()),
                Err(Failed::Redirect { address, ask }) => {
                    if !ask {
                        self.forget_slots(); // the slot has moved for good: re-read the map
                    }
                    master = self.master(&address)?;
                    asking = ask;
                }
                Err(Failed::Down(failure)) => {
                    // Maybe failed over: the next call reads the map again, and not from this
                    // master first (a partitioned one would eat that call's time).
                    self.forget_slots();
                    self.forget_master(master.url());
                    return Err(self.via(failure));
                }
                Err(Failed::Refused(failure)) => return Err(self.via(failure)),
            }
        }
        Err(self.failure(format!("more than {MAX_REDIRECTS} redirects for {key:?}")))
    }

    /// The master serving `slot`, reading the cluster's slot map first if it is not known.
    async fn master_for(&self, slot: u16, connect: Duration) -> Result<Arc<Server>, NodeFailure> {
        if let Some(address) = self.known_master(slot) {
            return self.master(&address);
        }
        let _one_at_a_time = self.refreshing.lock().await;
        if let Some(address) = self.known_master(slot) {
            return self.master(&address); // another call refreshed meanwhile
        }
        let map = self.read_slots(connect).await?;
        let address = map.master(slot).map(str::to_string);
        *self.slots.write().unwrap_or_else(|e| e.into_inner()) = Some(map);
        let address = address.ok_or_else(|| self.failure(format!("slot {slot} is not served")))?;
        self.master(&address)
    }

    fn known_master(&self, slot: u16) -> Option<String> {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        slots.as_ref()?.master(slot).map(str::to_string)
    }

    fn forget_slots(&self) {
        *self.slots.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// `CLUSTER SLOTS` from the first server that answers: the masters known so far, then the
    /// seed.
    async fn read_slots(&self, connect: Duration) -> Result<SlotMap, NodeFailure> {
        let mut asked: Vec<Arc<Server>> = self.known_masters();
        asked.push(self.seed_node()?);
        let mut reasons = Vec::new();
        let mut pipe = redis::pipe();
        pipe.cmd("CLUSTER").arg("SLOTS");
        for server in asked {
            let host = host_of(server.url());
            match server.call(&pipe, connect, connect).await {
                Ok(replies) => match replies.first().map(|reply| SlotMap::parse(reply, host)) {
                    Some(Ok(map)) => return Ok(map),
                    Some(Err(why)) => reasons.push(format!("{}: {why}", server.url())),
                    None => reasons.push(format!("{}: no reply", server.url())),
                },
                Err(failed) => {
                    let failure = failed.into_failure(server.url());
                    reasons.push(format!("{}: {}", failure.node, failure.reason));
                }
            }
        }
        Err(self.failure(format!("cannot read the slot map ({})", reasons.join("; "))))
    }

    fn forget_master(&self, address: &str) {
        let mut masters = self.masters.lock().unwrap_or_else(|e| e.into_inner());
        masters.remove(address);
    }

    fn known_masters(&self) -> Vec<Arc<Server>> {
        let masters = self.masters.lock().unwrap_or_else(|e| e.into_inner());
        masters.values().cloned().collect()
    }

    fn seed_node(&self) -> Result<Arc<Server>, NodeFailure> {
        let address = match self.seed.addr() {
            ConnectionAddr::Tcp(host, port) => super::slots::address(host, i64::from(*port)),
            other => return Err(self.failure(format!("unsupported address {other:?}"))),
        };
        self.master(&address)
    }

    /// The node for `host:port`, made on first use with the seed's settings.
    fn master(&self, address: &str) -> Result<Arc<Server>, NodeFailure> {
        let mut masters = self.masters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = masters.get(address) {
            return Ok(node.clone());
        }
        let info = self.info_for(address)?;
        let identity = self.identity.another();
        let node = Server::named(address, info, (None, identity), &self.connect)
            .map_err(|e| self.failure(e.to_string()))?;
        let node = Arc::new(node);
        masters.insert(address.to_string(), node.clone());
        Ok(node)
    }

    fn info_for(&self, address: &str) -> Result<ConnectionInfo, NodeFailure> {
        let (host, port) = split_address(address)
            .ok_or_else(|| self.failure(format!("unreadable address {address:?}")))?;
        let addr = if self.tls {
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(host, port)
        };
        Ok(self.seed.clone().set_addr(addr))
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure::new(self.url.clone(), reason)
    }

    /// A master's failure, named as this cluster's (whether it got no reply kept).
    fn via(&self, failure: NodeFailure) -> NodeFailure {
        NodeFailure {
            reason: format!("master {}: {}", failure.node, failure.reason),
            node: self.url.clone(),
            ..failure
        }
    }
}

/// `pipe` preceded by `ASKING`, which lets the next command reach a slot being imported.
fn with_asking(pipe: &Pipeline) -> Pipeline {
    let mut asking = redis::pipe();
    asking.cmd("ASKING");
    for cmd in pipe.cmd_iter() {
        asking.add_command(cmd.clone());
    }
    asking
}

/// `host:port` or `[v6]:port` split in two.
fn split_address(address: &str) -> Option<(String, u16)> {
    let (host, port) = address.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}

fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cluster a URL names (checked by transport/urls.rs).
    fn cluster(url: &str) -> Cluster {
        let Ok(super::super::urls::NodeUrl::Cluster { seed, tls }) = super::super::urls::parse(url)
        else {
            panic!("not a cluster URL: {url}");
        };
        let registry = super::super::identity::Registry::new(vec![url.to_string()]);
        let identity = Identity::new(&registry, 0);
        Cluster::new(url, seed, tls, &Connect::default(), identity)
    }

    #[test]
    fn every_master_of_a_tls_cluster_is_reached_over_tls() {
        let master = cluster("rediss+cluster://10.0.0.1:7000")
            .info_for("10.0.0.2:7001")
            .unwrap();
        assert!(
            matches!(master.addr(), ConnectionAddr::TcpTls { host, port: 7001, insecure: false, .. } if host == "10.0.0.2"),
            "every master over TLS: {:?}",
            master.addr()
        );
    }

    #[test]
    fn addresses_split_with_and_without_brackets() {
        assert_eq!(
            split_address("10.0.0.1:7000"),
            Some(("10.0.0.1".into(), 7000))
        );
        assert_eq!(split_address("[::1]:7000"), Some(("::1".into(), 7000)));
        assert_eq!(split_address("nohost"), None);
        assert_eq!(host_of("[::1]:7000"), "::1");
    }

    #[test]
    fn masters_are_reached_with_the_seeds_credentials() {
        let cluster = cluster("redis+cluster://alice:secret@10.0.0.1:7000");
        let info = cluster.info_for("10.0.0.2:7001").unwrap();
        assert_eq!(info.addr(), &ConnectionAddr::Tcp("10.0.0.2".into(), 7001));
        assert_eq!(info.redis_settings().username(), Some("alice"));
        assert_eq!(info.redis_settings().password(), Some("secret"));
    }
}
