//! A master that Redis Sentinel watches, as one quorum node:
//! `redis+sentinel://[user:pass@]host:port[,host:port...]/MASTER_NAME` (`rediss+sentinel://`
//! over TLS, for the sentinels and the master alike).
//!
//! The sentinels are asked for the master (redis-rs's sentinel client, which also checks with
//! `ROLE` that the node it names is a master), and the master is then reached like any single
//! master ([`Node`]: its own connections for server-side waits, every call bounded). The master
//! is forgotten, and asked for again on the next call, whenever a call finds it unreachable or
//! refusing writes (`READONLY`: it was demoted in a failover), so a client never keeps talking
//! to a stale master. URL credentials are the master's; the sentinels' own come from
//! [`crate::connect::Credentials`]'s sentinel fields.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, Pipeline, TlsMode, Value};

use super::cluster::Bounds;
use super::node::{Failed, Node};
use crate::connect::Connect;
use crate::error::{Error, NodeFailure};

const SCHEME: &str = "redis+sentinel://";
const TLS_SCHEME: &str = "rediss+sentinel://";

/// Whether `url` names a Sentinel-managed master.
pub fn is_sentinel_url(url: &str) -> bool {
    url.starts_with(SCHEME) || url.starts_with(TLS_SCHEME)
}

pub struct Sentinel {
    url: String,
    connect: Connect,
    /// Credentials and TLS of the master, from the URL and `connect`.
    master_info: redis::ConnectionInfo,
    resolver: tokio::sync::Mutex<SentinelClient>,
    master: Mutex<Option<Arc<Node>>>,
}

impl Sentinel {
    /// Checks the URL; asks the sentinels only when first used.
    pub fn new(url: &str, connect: &Connect) -> Result<Sentinel, Error> {
        let bad = |why: String| Error::InvalidArgument(format!("sentinel URL {url:?}: {why}"));
        let parts = SentinelUrl::parse(url).map_err(bad)?;
        let master_info = format!("redis://{}127.0.0.1/", parts.credentials)
            .into_connection_info()
            .map_err(|e| bad(e.to_string()))?;
        let resolver = resolver(&parts, connect).map_err(|e| bad(e.to_string()))?;
        Ok(Sentinel {
            url: url.to_string(),
            connect: connect.clone(),
            master_info,
            resolver: tokio::sync::Mutex::new(resolver),
            master: Mutex::new(None),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `pipe` on the current master; a master found down or demoted is forgotten.
    pub async fn call(&self, pipe: &Pipeline, bounds: Bounds) -> Result<Vec<Value>, NodeFailure> {
        let node = self.master(bounds.connect).await?;
        let reply = if bounds.blocking {
            node.call_blocking(pipe, bounds.connect, bounds.whole).await
        } else {
            node.call(pipe, bounds.whole).await
        };
        reply.map_err(|failed| {
            let demoted = matches!(&failed, Failed::Refused(f) if f.reason.starts_with("READONLY"));
            if demoted || matches!(failed, Failed::Down(_)) {
                self.forget(&node);
            }
            self.failure(failed.into_failure(node.url()).reason)
        })
    }

    /// The master the sentinels name now (cached until a call finds it down or demoted).
    async fn master(&self, timeout: Duration) -> Result<Arc<Node>, NodeFailure> {
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
        let node =
            Node::named(&name, info, &self.connect).map_err(|e| self.failure(e.to_string()))?;
        let node = Arc::new(node);
        *self.lock_master() = Some(node.clone());
        Ok(node)
    }

    fn forget(&self, node: &Arc<Node>) {
        let mut master = self.lock_master();
        if master.as_ref().is_some_and(|m| Arc::ptr_eq(m, node)) {
            *master = None;
        }
    }

    fn lock_master(&self) -> std::sync::MutexGuard<'_, Option<Arc<Node>>> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure {
            node: self.url.clone(),
            reason,
        }
    }
}

/// The parts of a sentinel URL.
struct SentinelUrl {
    tls: bool,
    /// `user:pass@`, or empty.
    credentials: String,
    sentinels: Vec<(String, u16)>,
    master_name: String,
}

impl SentinelUrl {
    fn parse(url: &str) -> Result<SentinelUrl, String> {
        let (tls, rest) = match (url.strip_prefix(SCHEME), url.strip_prefix(TLS_SCHEME)) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => {
                return Err(format!(
                    "expected {SCHEME}host:port[,host:port...]/MASTER_NAME"
                ))
            }
        };
        let (hosts, master_name) = rest
            .split_once('/')
            .filter(|(_, name)| !name.is_empty() && !name.contains('/'))
            .ok_or("the master's name is missing: .../MASTER_NAME")?;
        let (credentials, hosts) = match hosts.rsplit_once('@') {
            Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
            None => (String::new(), hosts),
        };
        let sentinels = hosts
            .split(',')
            .map(|address| {
                let (host, port) = address
                    .rsplit_once(':')
                    .ok_or_else(|| format!("sentinel {address:?} needs host:port"))?;
                let port = port
                    .parse::<u16>()
                    .map_err(|_| format!("sentinel {address:?}: bad port"))?;
                Ok((host.trim_matches(['[', ']']).to_string(), port))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(SentinelUrl {
            tls,
            credentials,
            sentinels,
            master_name: master_name.to_string(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_sentinels_credentials_and_the_master() {
        let parts =
            SentinelUrl::parse("redis+sentinel://u:p@10.0.0.1:26379,h2:26380/mymaster").unwrap();
        assert!(!parts.tls);
        assert_eq!(parts.credentials, "u:p@");
        assert_eq!(
            parts.sentinels,
            [("10.0.0.1".to_string(), 26379), ("h2".to_string(), 26380)]
        );
        assert_eq!(parts.master_name, "mymaster");
        assert!(SentinelUrl::parse("rediss+sentinel://h:1/m").unwrap().tls);
        for bad in [
            "redis+sentinel://h:1",
            "redis+sentinel://h:1/",
            "redis+sentinel://h/m",
            "redis+sentinel://h:x/m",
            "redis://h:1/m",
        ] {
            assert!(SentinelUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(is_sentinel_url("rediss+sentinel://h:1/m") && !is_sentinel_url("redis://h:1"));
    }
}
