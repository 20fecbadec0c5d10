//! The real transport: one [`Node`] per master URL.

use std::time::Duration;

use futures::future::BoxFuture;
use redis::Value;

use super::node::Node;
use super::{Request, Transport};
use crate::error::{Error, NodeFailure};

pub struct RedisTransport {
    nodes: Vec<Node>,
}

impl RedisTransport {
    /// Checks every URL; connects lazily (nodes may be down now and come up later).
    pub fn new(urls: &[String]) -> Result<RedisTransport, Error> {
        if urls.is_empty() {
            return Err(Error::InvalidArgument("no nodes given".into()));
        }
        let nodes = urls
            .iter()
            .map(|url| Node::new(url))
            .collect::<Result<_, _>>()?;
        Ok(RedisTransport { nodes })
    }
}

impl Transport for RedisTransport {
    fn nodes(&self) -> usize {
        self.nodes.len()
    }

    fn name(&self, node: usize) -> &str {
        self.nodes.get(node).map_or("?", Node::url)
    }

    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>> {
        Box::pin(async move {
            let Some(target) = self.nodes.get(node) else {
                return Err(NodeFailure {
                    node: format!("node {node}"),
                    reason: "no such node".into(),
                });
            };
            match request {
                // A server-side wait may take until its own timeout: `timeout` is the per-node
                // bound for connecting only, the wait's length plus that for the whole call.
                Request::Wait { timeout_ms, .. } => {
                    let whole = timeout + Duration::from_millis(timeout_ms);
                    target
                        .call_blocking(&request.to_cmd(), timeout, whole)
                        .await
                }
                _ => target.call(&request.to_cmd(), timeout).await,
            }
        })
    }
}
