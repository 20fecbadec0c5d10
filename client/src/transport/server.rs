//! One redis-server (a plain master, a cluster's master, the master sentinels name): a lazily
//! made multiplexed connection, re-made after any I/O error, and
//! every call bounded by the per-node timeout. A down node costs a failed call, never a hang.
//!
//! Server-side waits (`ACQUIRE ... WAIT`) block the connection they are sent on, so each gets a
//! connection of its own, taken from a small pool of idle ones. A wait that is abandoned (the
//! lock was won elsewhere, the deadline passed) drops its connection: the server sees the
//! disconnect and takes the waiter out of its queue at once.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionInfo, ErrorKind, Pipeline, Value};
use tokio::sync::Mutex;

use super::diagnosis;
use super::identity::{self, Identity};
use crate::connect::Connect;
use crate::errors::{Error, NodeFailure};

/// Idle wait connections kept per node; more are made on demand and closed after use.
const IDLE_WAIT_CONNECTIONS: usize = 64;

pub struct Server {
    url: String,
    client: Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    idle_for_waits: std::sync::Mutex<Vec<MultiplexedConnection>>,
    /// `CLIENT SETNAME` on each new connection (a URL's `client_name`).
    client_name: Option<String>,
    /// How the caller gives a user and password, for the failures that need one.
    login_hint: String,
    /// Which server each new connection reached, checked before its first request.
    identity: Identity,
}

impl Server {
    /// A server reached by `info` with `connect`'s TLS and credentials, called `name` in errors
    /// (a URL without its password, or an address), its connections checked by `identity`.
    pub fn named(
        name: &str,
        info: ConnectionInfo,
        (client_name, identity): (Option<String>, Identity),
        connect: &Connect,
    ) -> Result<Server, Error> {
        let client = connect
            .client(info)
            .map_err(|e| Error::InvalidArgument(format!("node URL {name:?}: {e}")))?;
        Ok(Server {
            url: name.to_string(),
            client,
            connection: Mutex::new(None),
            idle_for_waits: std::sync::Mutex::new(Vec::new()),
            client_name,
            login_hint: connect.login_hint().to_string(),
            identity,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `pipe` on the shared connection: one reply per command. Setting a connection up has
    /// its own allowance ([`setup_allowance`] of `connect`), and the request `timeout` after it:
    /// a slow node's handshake and `DLOCK.RUNID` round trip must not eat the request's time, or
    /// every call gives up before its request is sent and a grant left by the one that got
    /// through is never released (issue 48 F3; the Go client bounds each step alike). A request
    /// is queued only once its connection is set up, inside this call: a call that gives up
    /// while connecting never sends it later.
    ///
    /// A connection that was open before this call and turns out dead (the node restarted
    /// since) is replaced and the call made once more: every request the client sends can be
    /// repeated by the same owner without changing the outcome (a repeated RELEASE answers 0,
    /// which still counts as an answer).
    pub async fn call(
        &self,
        pipe: &Pipeline,
        connect: Duration,
        timeout: Duration,
    ) -> Result<Vec<Value>, Failed> {
        let (mut connection, reused) = self.shared(connect).await?;
        let mut reply = self.query(pipe, &mut connection, timeout).await?;
        if reused && reply.as_ref().is_err_and(is_broken) {
            *self.connection.lock().await = None;
            let (mut fresh, _) = self.shared(connect).await?;
            reply = self.query(pipe, &mut fresh, timeout).await?;
        }
        reply.map_err(|e| {
            if is_broken(&e) {
                if let Ok(mut slot) = self.connection.try_lock() {
                    *slot = None; // the next call reconnects
                }
            }
            self.failed(&e)
        })
    }

    /// Runs `pipe`, which blocks on the server, on a connection of its own: set up within its
    /// own allowance (see [`Server::call`]), the request within `timeout`. The connection goes
    /// back to the idle pool only after a complete reply; a call that fails or is dropped midway
    /// closes it.
    pub async fn call_blocking(
        &self,
        pipe: &Pipeline,
        connect: Duration,
        timeout: Duration,
    ) -> Result<Vec<Value>, Failed> {
        let idle = self.idle_wait_connection();
        let reused = idle.is_some();
        let mut connection = match idle {
            Some(connection) => connection,
            None => self.fresh(connect).await?,
        };
        let mut reply = self.query(pipe, &mut connection, timeout).await?;
        if reused && reply.as_ref().is_err_and(is_broken) {
            connection = self.fresh(connect).await?; // idle since a restart
            reply = self.query(pipe, &mut connection, timeout).await?;
        }
        match reply {
            Ok(values) => {
                self.return_wait_connection(connection);
                Ok(values)
            }
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// `pipe` on `connection`: its replies or error, or no reply within `timeout`.
    async fn query(
        &self,
        pipe: &Pipeline,
        connection: &mut MultiplexedConnection,
        timeout: Duration,
    ) -> Result<redis::RedisResult<Vec<Value>>, Failed> {
        let reply = pipe.query_async::<Vec<Value>>(connection);
        (tokio::time::timeout(timeout, reply).await).map_err(|_| self.timed_out(timeout))
    }

    /// The shared connection within the setup allowance (waiting for another call's setup of
    /// it included).
    async fn shared(&self, connect: Duration) -> Result<(MultiplexedConnection, bool), Failed> {
        let made = tokio::time::timeout(setup_allowance(connect), self.connection(connect));
        made.await.unwrap_or_else(|_| Err(self.timed_out(connect)))
    }

    /// A new connection of its own within the setup allowance.
    async fn fresh(&self, connect: Duration) -> Result<MultiplexedConnection, Failed> {
        let made = tokio::time::timeout(setup_allowance(connect), self.connect(connect));
        made.await.unwrap_or_else(|_| Err(self.timed_out(connect)))
    }

    fn idle_wait_connection(&self) -> Option<MultiplexedConnection> {
        self.idle_for_waits.lock().ok()?.pop()
    }

    fn return_wait_connection(&self, connection: MultiplexedConnection) {
        if let Ok(mut idle) = self.idle_for_waits.lock() {
            if idle.len() < IDLE_WAIT_CONNECTIONS {
                idle.push(connection);
            }
        }
    }

    /// The shared connection, made on first use or after an error; and whether it was open
    /// before (so possibly stale).
    async fn connection(&self, timeout: Duration) -> Result<(MultiplexedConnection, bool), Failed> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok((connection.clone(), true));
        }
        let connection = self.connect(timeout).await?;
        *slot = Some(connection.clone());
        Ok((connection, false))
    }

    /// A new connection, named when the URL asks; replies may take as long as the caller
    /// allows.
    async fn connect(&self, timeout: Duration) -> Result<MultiplexedConnection, Failed> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(None);
        let tls = matches!(
            self.client.get_connection_info().addr(),
            redis::ConnectionAddr::TcpTls { .. }
        );
        let db = self.client.get_connection_info().redis_settings().db();
        let cannot = |e: redis::RedisError| {
            let why = match diagnosis::database_refused(&e) {
                Some(refused) => format!("database {db} {refused}"),
                None => diagnosis::cannot_connect(&e, tls, timeout, &self.login_hint),
            };
            Failed::Down(self.failure(why).incurable(diagnosis::incurable(&e)))
        };
        let mut connection = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(cannot)?;
        if let Some(name) = &self.client_name {
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg(name)
                .query_async::<()>(&mut connection)
                .await
                .map_err(cannot)?;
        }
        // Before any request: a server another node reaches must not count twice. The run_id's
        // round trip has the connection's timeout again, not what the handshake left of it.
        let identified = self.identify(&mut connection, cannot);
        match tokio::time::timeout(timeout, identified).await {
            Ok(result) => result.map(|()| connection),
            Err(_) => Err(self.timed_out(timeout)),
        }
    }

    /// Reads the server's run_id on a connection just made and claims it (identity.rs), or
    /// says why the connection is refused (`cannot`: it broke meanwhile).
    async fn identify(
        &self,
        connection: &mut MultiplexedConnection,
        cannot: impl Fn(redis::RedisError) -> Failed,
    ) -> Result<(), Failed> {
        let asked = match redis::cmd("DLOCK.RUNID")
            .query_async::<Value>(connection)
            .await
        {
            Ok(Value::ServerError(e)) => Err(redis::RedisError::from(e)),
            other => other,
        };
        let refused = |why: String| Failed::Refused(self.failure(why));
        let run_id = match asked {
            Ok(reply) => Some(identity::read_run_id(&reply).map_err(refused)?),
            // A module older than DLOCK.RUNID: INFO server shows the same run_id.
            Err(e) if identity::unknown_command(&diagnosis::reply_error(&e, "")) => {
                let info = redis::cmd("INFO")
                    .arg("server")
                    .query_async::<String>(connection)
                    .await
                    .map_err(|e| self.unidentified(e, &cannot, identity::info_refused))?;
                identity::run_id(&info).map(str::to_string)
            }
            Err(e) => return Err(self.unidentified(e, &cannot, identity::run_id_refused)),
        };
        self.identity.check(run_id.as_deref()).map_err(refused)
    }

    /// Why a connection whose server would not say its run_id (`e`) is not used: it broke, no
    /// password was given (said as any first request says it), or `refusal` of what to allow.
    fn unidentified(
        &self,
        e: redis::RedisError,
        cannot: &impl Fn(redis::RedisError) -> Failed,
        refusal: fn(&String) -> String,
    ) -> Failed {
        let why = diagnosis::reply_error(&e, &self.login_hint);
        let incurable = diagnosis::incurable(&e);
        if is_broken(&e) {
            cannot(e)
        } else if diagnosis::about_login(&e) {
            Failed::Refused(self.failure(why).incurable(incurable))
        } else {
            Failed::Refused(self.failure(refusal(&why)).incurable(incurable))
        }
    }

    fn failure(&self, reason: String) -> NodeFailure {
        NodeFailure::new(self.url.clone(), reason)
    }

    fn timed_out(&self, timeout: Duration) -> Failed {
        Failed::Down(NodeFailure::no_reply(self.url.clone(), timeout))
    }

    fn failed(&self, e: &redis::RedisError) -> Failed {
        // A pipeline's error reply comes wrapped with the others; the first is the request's.
        let first = e.clone().into_server_errors().and_then(|errors| {
            let (_, first) = errors.first()?;
            Some(redis::RedisError::from(first.clone()))
        });
        let e = first.as_ref().unwrap_or(e);
        if let Some((address, _slot)) = e.redirect_node() {
            let ask = e.kind() == ErrorKind::Server(redis::ServerErrorKind::Ask);
            return Failed::Redirect {
                address: address.to_string(),
                ask,
            };
        }
        let failure = self.failure(diagnosis::reply_error(e, &self.login_hint));
        if is_broken(e) {
            Failed::Down(failure)
        } else {
            Failed::Refused(failure)
        }
    }
}

/// Why a call to one server did not bring replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// Unreachable: could not connect, the connection broke, or no reply in time.
    Down(NodeFailure),
    /// The server answered with an error.
    Refused(NodeFailure),
    /// Redis Cluster: the key's slot is served elsewhere (`MOVED`), or is moving there and the
    /// key is already there (`ASK`).
    Redirect { address: String, ask: bool },
}

impl Failed {
    /// What the rounds see: which node failed and why.
    pub fn into_failure(self, node: &str) -> NodeFailure {
        match self {
            Failed::Down(failure) | Failed::Refused(failure) => failure,
            Failed::Redirect { address, ask } => NodeFailure::new(
                node,
                format!("{} to {address}", if ask { "ASK" } else { "MOVED" }),
            ),
        }
    }
}

/// How long setting a connection up may take, `connect` being the per-node timeout: the TCP
/// (and TLS) handshake with the login and database, then the run_id's round trip, each within it.
pub fn setup_allowance(connect: Duration) -> Duration {
    connect * 2
}

/// The connection is unusable (as opposed to a server's error reply).
fn is_broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_timeout()
}
