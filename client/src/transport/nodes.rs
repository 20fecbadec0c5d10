//! The real transport: per node URL one master ([`Node`]), one Redis Cluster ([`Cluster`], for
//! `redis+cluster://` URLs) or one Sentinel-managed master ([`Sentinel`], `redis+sentinel://`),
//! each with its replica acknowledgement.

use std::time::Duration;

use futures::future::BoxFuture;
use redis::{Pipeline, Value};

use super::ack::{self, Ack};
use super::cluster::{is_cluster_url, Bounds, Cluster};
use super::node::Node;
use super::sentinel::{is_sentinel_url, Sentinel};
use super::{Request, Transport};
use crate::connect::Connect;
use crate::error::{Error, NodeFailure};
use crate::options::ReplicaAck;

pub struct RedisTransport {
    nodes: Vec<Member>,
}

/// One quorum node.
struct Member {
    server: Server,
    ack: Option<Ack>,
}

enum Server {
    Master(Node),
    Cluster(Cluster),
    Sentinel(Box<Sentinel>),
}

impl RedisTransport {
    /// Checks every URL; connects lazily (nodes may be down now and come up later).
    pub fn new(
        urls: &[String],
        replica_ack: ReplicaAck,
        connect: &Connect,
    ) -> Result<RedisTransport, Error> {
        if urls.is_empty() {
            return Err(Error::InvalidArgument("no nodes given".into()));
        }
        let nodes = urls
            .iter()
            .map(|url| Member::new(url, replica_ack, connect))
            .collect::<Result<_, _>>()?;
        Ok(RedisTransport { nodes })
    }
}

impl Member {
    fn new(url: &str, replica_ack: ReplicaAck, connect: &Connect) -> Result<Member, Error> {
        let server = if is_cluster_url(url) {
            Server::Cluster(Cluster::new(url, connect)?)
        } else if is_sentinel_url(url) {
            Server::Sentinel(Box::new(Sentinel::new(url, connect)?))
        } else {
            Server::Master(Node::new(url, connect)?)
        };
        let failover = !matches!(server, Server::Master(_));
        Ok(Member {
            server,
            ack: Ack::for_node(replica_ack, failover),
        })
    }

    fn url(&self) -> &str {
        match &self.server {
            Server::Master(node) => node.url(),
            Server::Cluster(cluster) => cluster.url(),
            Server::Sentinel(sentinel) => sentinel.url(),
        }
    }

    /// `request` with its acknowledgement: `timeout` bounds connecting; the whole call may
    /// also take the server-side wait and the acknowledgement.
    async fn call(&self, request: Request<'_>, timeout: Duration) -> Result<Value, NodeFailure> {
        let pipe = ack::pipeline(request, self.ack);
        let waits_ms = match request {
            Request::Wait { timeout_ms, .. } => timeout_ms,
            _ => 0,
        };
        let bounds = Bounds {
            connect: timeout,
            whole: timeout + Duration::from_millis(waits_ms) + ack::extra_time(request, self.ack),
            blocking: matches!(request, Request::Wait { .. }),
        };
        let replies = self.send(request.resource(), &pipe, bounds).await?;
        ack::reply(request, replies, self.ack).map_err(|reason| NodeFailure {
            node: self.url().to_string(),
            reason,
        })
    }

    async fn send(
        &self,
        key: &str,
        pipe: &Pipeline,
        bounds: Bounds,
    ) -> Result<Vec<Value>, NodeFailure> {
        match &self.server {
            Server::Cluster(cluster) => cluster.call(key, pipe, bounds).await,
            Server::Sentinel(sentinel) => sentinel.call(pipe, bounds).await,
            Server::Master(node) => {
                let reply = if bounds.blocking {
                    node.call_blocking(pipe, bounds.connect, bounds.whole).await
                } else {
                    node.call(pipe, bounds.whole).await
                };
                reply.map_err(|failed| failed.into_failure(node.url()))
            }
        }
    }
}

impl Transport for RedisTransport {
    fn nodes(&self) -> usize {
        self.nodes.len()
    }

    fn name(&self, node: usize) -> &str {
        self.nodes.get(node).map_or("?", Member::url)
    }

    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>> {
        Box::pin(async move {
            let Some(member) = self.nodes.get(node) else {
                return Err(NodeFailure {
                    node: format!("node {node}"),
                    reason: "no such node".into(),
                });
            };
            member.call(request, timeout).await
        })
    }
}
