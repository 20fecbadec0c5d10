//! The real transport: the quorum nodes, each named by its URL (transport/urls.rs reads it): one
//! server ([`Server`]), a whole Redis Cluster ([`Cluster`], `redis+cluster://`) or the master a
//! group of sentinels names ([`Sentinel`], `redis+sentinel://`), each with its replica
//! acknowledgement.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::{Pipeline, Value};

use super::ack::{self, Ack};
use super::cluster::{Bounds, Cluster};
use super::identity::{Identity, Registry};
use super::sentinel::Sentinel;
use super::server::Server;
use super::urls::{self, NodeUrl};
use super::{Request, Transport};
use crate::connect::Connect;
use crate::errors::{Error, NodeFailure};
use crate::options::ReplicaAck;

pub struct RedisTransport {
    nodes: Vec<Member>,
    /// Which node reaches which server: one server never counts twice (identity.rs).
    registry: Arc<Registry>,
}

/// One quorum node.
struct Member {
    index: usize,
    /// Its URL, the password hidden.
    name: String,
    reached: Reached,
    ack: Option<Ack>,
}

/// How a quorum node is reached.
enum Reached {
    Server(Server),
    Cluster(Cluster),
    Sentinel(Box<Sentinel>),
}

impl RedisTransport {
    /// Checks every URL, and that none is given twice; connects lazily (nodes may be down now
    /// and come up later).
    pub fn new(
        urls: &[String],
        replica_ack: ReplicaAck,
        connect: &Connect,
    ) -> Result<RedisTransport, Error> {
        if urls.is_empty() {
            return Err(Error::InvalidArgument("no nodes given".into()));
        }
        let names: Vec<String> = urls.iter().map(|url| name_of(url)).collect();
        if let Some(twice) = given_twice(&names) {
            return Err(Error::InvalidArgument(format!(
                "node {twice} is given twice: list each server once"
            )));
        }
        let registry = Registry::new(names);
        let nodes = (urls.iter().enumerate())
            .map(|(index, url)| {
                let identity = Identity::new(&registry, index);
                Member::new(url, replica_ack, connect, identity)
            })
            .collect::<Result<_, _>>()?;
        Ok(RedisTransport { nodes, registry })
    }
}

/// How a node is named: its URL, the scheme in lower case and the password hidden.
fn name_of(url: &str) -> String {
    urls::redact(&urls::lowercase_scheme(url))
}

/// The first name given twice (URLs that differ only in their password name one server too).
fn given_twice(names: &[String]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .find(|name| !seen.insert(name.as_str()))
        .map(String::as_str)
}

impl Member {
    fn new(
        url: &str,
        replica_ack: ReplicaAck,
        connect: &Connect,
        identity: Identity,
    ) -> Result<Member, Error> {
        let name = name_of(url);
        let index = identity.member();
        let reached = match urls::parse(url).map_err(Error::InvalidArgument)? {
            NodeUrl::Single { info, client_name } => Reached::Server(Server::named(
                &name,
                info,
                (client_name, identity),
                connect,
            )?),
            NodeUrl::Cluster { seed, tls } => {
                Reached::Cluster(Cluster::new(&name, seed, tls, connect, identity))
            }
            NodeUrl::Sentinel(parts) => {
                Reached::Sentinel(Box::new(Sentinel::new(&name, &parts, connect, identity)?))
            }
        };
        let failover = !matches!(reached, Reached::Server(_));
        Ok(Member {
            index,
            name,
            reached,
            ack: Ack::for_node(replica_ack, failover),
        })
    }

    /// `request` with its acknowledgement: `timeout` bounds connecting; the whole call may
    /// also take the server-side wait and the acknowledgement.
    async fn call(&self, request: Request<'_>, timeout: Duration) -> Result<Value, NodeFailure> {
        let pipe = ack::pipeline(request, self.ack);
        // A server notices a blocked client's timeout only at its next `hz` tick: a wait's nil
        // may come that much after the wait's own time.
        let waits = request
            .blocks_for()
            .map_or(Duration::ZERO, |wait| wait + ack::TIMEOUT_RESOLUTION);
        let bounds = Bounds {
            connect: timeout,
            whole: timeout + waits + ack::extra_time(request, self.ack),
            blocking: request.blocks_for().is_some(),
        };
        let replies = self.send(request.resource(), &pipe, bounds).await?;
        ack::reply(request, replies, self.ack)
            .map_err(|reason| NodeFailure::new(&self.name, reason))
    }

    async fn send(
        &self,
        key: &str,
        pipe: &Pipeline,
        bounds: Bounds,
    ) -> Result<Vec<Value>, NodeFailure> {
        match &self.reached {
            Reached::Cluster(cluster) => cluster.call(key, pipe, bounds).await,
            Reached::Sentinel(sentinel) => sentinel.call(pipe, bounds).await,
            Reached::Server(server) => {
                let reply = if bounds.blocking {
                    server
                        .call_blocking(pipe, bounds.connect, bounds.whole)
                        .await
                } else {
                    server.call(pipe, bounds.connect, bounds.whole).await
                };
                reply.map_err(|failed| failed.into_failure(server.url()))
            }
        }
    }
}

impl Transport for RedisTransport {
    fn nodes(&self) -> usize {
        self.nodes.len()
    }

    fn name(&self, node: usize) -> &str {
        self.nodes.get(node).map_or("?", |member| &member.name)
    }

    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>> {
        Box::pin(async move {
            let Some(member) = self.nodes.get(node) else {
                return Err(NodeFailure::new(format!("node {node}"), "no such node"));
            };
            // A node found to reach another node's server is never asked again.
            if let Some(why) = self.registry.refused(member.index) {
                return Err(NodeFailure::new(&member.name, why));
            }
            let reply = member.call(request, timeout).await;
            self.registry.met(member.index);
            reply
        })
    }

    fn refusal(&self) -> Option<String> {
        self.registry.refusal()
    }

    fn is_cluster(&self) -> bool {
        self.nodes
            .iter()
            .any(|m| matches!(m.reached, Reached::Cluster(_)))
    }

    fn meet_all(&self, within: Duration) -> BoxFuture<'_, ()> {
        Box::pin(self.registry.meet_all(within))
    }
}
