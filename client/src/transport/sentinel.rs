//! A master that Redis Sentinel watches, as one quorum node:
//! `redis+sentinel://[user:pass@]host[:port][,host[:port]...]/MASTER_NAME` (port 26379 by
//! default; `rediss+sentinel://` over TLS, for the sentinels and the master alike).
//!
//! The sentinels are asked for the master (redis-rs's sentinel client, which also checks with
//! `ROLE` that the node it names is a master), and the master is then reached like any single
//! master ([`Server`]: its own connections for server-side waits, every call bounded). The master
//! is forgotten, and asked for again on the next call, whenever a call finds it unreachable or
//! refusing writes (`READONLY`: it was demoted in a failover), so a client never keeps talking
//! to a stale master. URL credentials are the master's; the sentinels' own come from
//! [`crate::connect::Credentials`]'s sentinel fields.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, Pipeline, TlsMode, Value};

use super::cluster::Bounds;
use super::identity::Identity;
use super::server::{Failed, Server};
use super::urls::SentinelUrl;
use crate::connect::Connect;
use crate::errors::{Error, NodeFailure};

pub struct Sentinel {
    url: String,
    connect: Connect,
    /// Credentials and TLS of the master, from the URL and `connect`.
    master_info: redis::ConnectionInfo,
    resolver: tokio::sync::Mutex<SentinelClient>,
    master: Mutex<Option<Arc<Server>>>,
    /// This quorum node's identity: the master found claims its server, the next one found
    /// (after a failover) takes the claim over.
    identity: Identity,
}

impl Sentinel {
    /// The master `parts` name, called `name` in errors; asks the sentinels only when first
    /// used.
    pub fn new(
        name: &str,
        parts: &SentinelUrl,
        connect: &Connect,
        identity: Identity,
    ) -> Result<Sentinel, Error> {
        let bad = |why: String| Error::InvalidArgument(format!("sentinel URL {name:?}: {why}"));
        let master_info = format!("redis://{}127.0.0.1/", parts.credentials)
            .into_connection_info()
            .map_err(|e| bad(e.to_string()))?;
        let resolver = resolver(parts, connect).map_err(|e| bad(e.to_string()))?;
        Ok(Sentinel {
            url: name.to_string(),
            connect: connect.clone(),
            master_info,
            resolver: tokio::sync::Mutex::new(resolver),
            master: Mutex::new(None),
            identity,
        })
    }

    /// Runs `pipe` on the current master; a master found down or demoted is forgotten.
    pub async fn call(&self, pipe: &Pipeline, bounds: Bounds) -> Result<Vec<Value>, NodeFailure> {
        let node = self.master(bounds.connect).await?;
        let reply = if bounds.blocking {
            node.call_blocking(pipe, bounds.connect, bounds.whole).await
        } else {
            node.call(pipe, bounds.connect, bounds.whole).await
        };
        reply.map_err(|failed| {
            let demoted = matches!(&failed, Failed::Refused(f) if f.reason.starts_with("READONLY"));
            if demoted || matches!(failed, Failed::Down(_)) {
                self.forget(&node);
            }
            NodeFailure {
                node: self.url.clone(),
                ..failed.into_failure(node.url())
            }
        })
    }

    /// The master the sentinels name now (cached until a call finds it down or demoted).
    async fn master(&self, timeout: Duration) -> Result<Arc<Server>, NodeFailure> {
        if let Some(node) = self.lock_master().clone() {
            return Ok(node);
        }
        let asked = async {
            let mut resolver = self.resolver.lock().await;
            resolver.async_get_client().await
        };
        let client = match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(self.failure(format!("no master from the sentinels: {e}"))),
            Err(_) => return Err(self.failure(format!("sentinels timed out after {timeout:?}"))),
        };
        let address = client.get_connection_info().addr().clone();
        let name = match &address {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                format!("{host}:{port}")
            }
            other => format!("{other:?}"),
        };
        let info = self.master_info.clone().set_addr(address);
        // The group's one place: a failover's new master moves it (identity.rs).
        let identity = self.identity.clone();
        let node = Server::named(&name, info, (None, identity), &self.connect)
            .map_err(|e| self.failure(e.to_string()))?;
        let node = Arc::new(node);
        *self.lock_master() = Some(node.clone());
        Ok(node)
    }

    fn forget(&self, node: &Arc<Server>) {
        let mut master = self.lock_master();
        if master.as_ref().is_some_and(|m| Arc::ptr_eq(m, node)) {
            *master = None;
        }
    }

    fn lock_master(&self) -> std::sync::MutexGuard<'_, Option<Arc<Server>>> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure::new(self.url.clone(), reason)
    }
}

/// redis-rs's sentinel client for the parts, with `connect`'s TLS and sentinel credentials.
fn resolver(parts: &SentinelUrl, connect: &Connect) -> redis::RedisResult<SentinelClient> {
    let addresses = parts.sentinels.iter().map(|(host, port)| {
        if parts.tls {
            ConnectionAddr::TcpTls {
                host: host.clone(),
                port: *port,
                insecure: connect.tls.is_insecure(),
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(host.clone(), *port)
        }
    });
    let mut builder = SentinelClientBuilder::new(
        addresses,
        parts.master_name.clone(),
        SentinelServerType::Master,
    )?;
    if parts.tls {
        crate::connect::install_crypto_provider();
        let mode = if connect.tls.is_insecure() {
            TlsMode::Insecure
        } else {
            TlsMode::Secure
        };
        builder = builder
            .set_client_to_sentinel_tls_mode(mode)
            .set_client_to_sentinel_certificates(connect.tls.certificates())
            .set_client_to_redis_tls_mode(mode)
            .set_client_to_redis_certificates(connect.tls.certificates());
    }
    if let Some(user) = &connect.credentials.sentinel_username {
        builder = builder.set_client_to_sentinel_username(user);
    }
    if let Some(password) = &connect.credentials.sentinel_password {
        builder = builder.set_client_to_sentinel_password(password);
    }
    builder.build()
}
