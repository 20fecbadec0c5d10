//! A scripted transport for unit tests, after the failure-injecting test store of
//! brandur/redis-cell: each reply is whatever the script says for (node, request, attempt), the
//! clock advances by a set latency per call, and every request is logged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Value;

use super::Transport;
use crate::commands::Request;
use crate::errors::NodeFailure;
use crate::timing::testing::FakeClock;

/// What a scripted node answers: a reply, or a failure reason (timeout, refused connection).
/// The reason [`NEVER`] makes the call hang instead (a wait nobody serves).
pub type Script = dyn Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync;

/// A scripted failure reason meaning "never answer".
pub const NEVER: &str = "never answers";
/// A scripted failure reason meaning "answer token 99, but only 500 ms later" (a wait served
/// after the client gave up on it).
pub const LATE: &str = "granted late";
/// A scripted failure reason meaning "no reply within the call's time": the call fails after
/// the per-node timeout plus, for a wait, its own time (as the real transport bounds it).
pub const NO_REPLY: &str = "no reply";

pub struct FakeTransport {
    names: Vec<String>,
    script: Box<Script>,
    clock: Arc<FakeClock>,
    latency: Duration,
    log: Mutex<Vec<(usize, String)>>,
}

impl FakeTransport {
    /// `nodes` fake nodes answering by `script(node, request, attempt)`, where `attempt` counts
    /// this node's earlier requests of the same kind.
    pub fn new(
        nodes: usize,
        clock: Arc<FakeClock>,
        script: impl Fn(usize, &Request<'_>, usize) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        FakeTransport {
            names: (0..nodes).map(|i| format!("fake://{i}")).collect(),
            script: Box::new(script),
            clock,
            latency: Duration::from_millis(1),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Each call moves the clock forward by `latency` (default 1 ms).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// The requests node `node` received, as `KIND args`.
    pub fn sent_to(&self, node: usize) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .filter(|(n, _)| *n == node)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Every request, in order.
    pub fn sent(&self) -> Vec<(usize, String)> {
        self.log.lock().unwrap().clone()
    }
}

fn describe(request: &Request<'_>) -> String {
    match *request {
        Request::Acquire { ttl_ms, .. } => format!("ACQUIRE {ttl_ms}"),
        Request::Wait { owner, ticket, .. } => {
            let round = owner.rsplit(':').next().unwrap_or("?");
            match ticket {
                Some(ticket) => format!("WAIT round {round} ticket {ticket}"),
                None => format!("WAIT round {round}"),
            }
        }
        Request::Fence {
            token,
            ttl_ms: Some(ttl_ms),
            ..
        } => format!("FENCE {token} PX {ttl_ms}"),
        Request::Fence { token, .. } => format!("FENCE {token}"),
        Request::Extend { ttl_ms, .. } => format!("EXTEND {ttl_ms}"),
        Request::Release { .. } => "RELEASE".into(),
        Request::Proclaim { token, .. } => format!("PROCLAIM {token}"),
        Request::Observe { after, .. } => format!("OBSERVE {}", after.map_or(0, |(t, _)| t)),
        Request::Status { .. } => "STATUS".into(),
        Request::Waiters { .. } => "WAITERS".into(),
        Request::Top { cursor, .. } => format!("TOP {cursor}"),
        Request::Set { op, .. } => format!("SET {op:?}"),
    }
}

impl Transport for FakeTransport {
    fn nodes(&self) -> usize {
        self.names.len()
    }

    fn name(&self, node: usize) -> &str {
        &self.names[node]
    }

    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>> {
        let kind = describe(&request);
        let attempt = {
            let mut log = self.log.lock().unwrap();
            let kind_word = kind.split(' ').next().unwrap().to_string();
            let attempt = log
                .iter()
                .filter(|(n, r)| *n == node && r.starts_with(&kind_word))
                .count();
            log.push((node, kind));
            attempt
        };
        self.clock.advance(self.latency);
        let reply = (self.script)(node, &request, attempt)
            .map_err(|reason| NodeFailure::new(self.names[node].clone(), reason));
        let bound = timeout + request.blocks_for().unwrap_or_default();
        let name = self.names[node].clone();
        Box::pin(async move {
            match &reply {
                Err(failure) if failure.reason == NEVER => std::future::pending::<()>().await,
                Err(failure) if failure.reason == NO_REPLY => {
                    tokio::time::sleep(bound).await;
                    return Err(NodeFailure::no_reply(name, bound));
                }
                Err(failure) if failure.reason == LATE => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    return Ok(Value::Int(99));
                }
                _ => {}
            }
            reply
        })
    }
}

/// Shared, so a test keeps a handle on the log while a manager owns the transport.
impl Transport for Arc<FakeTransport> {
    fn nodes(&self) -> usize {
        self.as_ref().nodes()
    }

    fn name(&self, node: usize) -> &str {
        self.as_ref().name(node)
    }

    fn call<'a>(
        &'a self,
        node: usize,
        request: Request<'a>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, NodeFailure>> {
        self.as_ref().call(node, request, timeout)
    }
}
