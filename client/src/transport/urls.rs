//! Node URLs, read before anything connects; the Python and Node clients give the same answers
//! (conformance/urls.json). Schemes are read in any case.
//!
//! - `redis://`, `rediss://` (TLS), `unix://`: one server. The query may set `db` (before the
//!   path's database) and `client_name` (sent as `CLIENT SETNAME` on each connection), nothing
//!   else: timeouts and TLS settings are the manager's, and a misspelt option must not be dropped
//!   in silence.
//! - `redis+cluster://[user:pass@]host[:port]` (`rediss+cluster://`): a whole Redis Cluster,
//!   reached through one seed (port 6379 by default); database 0 only, no query.
//! - `redis+sentinel://[user:pass@]host[:port][,host[:port]...]/MASTER` (`rediss+sentinel://`):
//!   the master the sentinels name (port 26379 by default); no query.
//!
//! A node's name (in errors, status and `node_urls`) is its URL with the password shown as `***`.

use std::collections::HashMap;

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

const CLUSTER: [&str; 2] = ["redis+cluster://", "rediss+cluster://"];
const SENTINEL: [&str; 2] = ["redis+sentinel://", "rediss+sentinel://"];
const SINGLE: [&str; 3] = ["redis://", "rediss://", "unix://"];
const SENTINEL_PORT: u16 = 26379;
/// The query parameters a single server's URL may carry.
const QUERY: [&str; 2] = ["db", "client_name"];

/// One node as its URL says.
#[derive(Debug, Clone)]
pub enum NodeUrl {
    /// One server: how to reach it, and the name its connections take.
    Single {
        info: ConnectionInfo,
        client_name: Option<String>,
    },
    /// A Redis Cluster: how to reach its seed; every master is reached the same way.
    Cluster {
        seed: ConnectionInfo,
        tls: bool,
    },
    Sentinel(SentinelUrl),
}

/// The parts of a sentinel URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelUrl {
    pub tls: bool,
    /// `user:pass@` (the master's), or empty.
    pub credentials: String,
    pub sentinels: Vec<(String, u16)>,
    pub master_name: String,
}

/// What the conformance table checks of a URL.
#[cfg(test)]
impl NodeUrl {
    /// `single`, `cluster` or `sentinel`.
    pub fn form(&self) -> &'static str {
        match self {
            NodeUrl::Single { .. } => "single",
            NodeUrl::Cluster { .. } => "cluster",
            NodeUrl::Sentinel(_) => "sentinel",
        }
    }

    pub fn tls(&self) -> bool {
        match self {
            NodeUrl::Single { info, .. } => matches!(info.addr(), ConnectionAddr::TcpTls { .. }),
            NodeUrl::Cluster { tls, .. } => *tls,
            NodeUrl::Sentinel(parts) => parts.tls,
        }
    }

    /// The ports it names, defaults filled in (none for a socket).
    pub fn ports(&self) -> Vec<u16> {
        let port = |info: &ConnectionInfo| match info.addr() {
            ConnectionAddr::Tcp(_, port) | ConnectionAddr::TcpTls { port, .. } => vec![*port],
            _ => Vec::new(),
        };
        match self {
            NodeUrl::Single { info, .. } => port(info),
            NodeUrl::Cluster { seed, .. } => port(seed),
            NodeUrl::Sentinel(parts) => parts.sentinels.iter().map(|(_, p)| *p).collect(),
        }
    }
}

/// Reads `url`; why not, when it cannot be used (the password never in it).
pub fn parse(url: &str) -> Result<NodeUrl, String> {
    let url = lowercase_scheme(url);
    let name = redact(&url);
    let url = url.as_str();
    let starts = |schemes: &[&str]| schemes.iter().any(|s| url.starts_with(s));
    if starts(&CLUSTER) {
        cluster(url).map_err(|why| format!("cluster URL {name:?}: {why}"))
    } else if starts(&SENTINEL) {
        sentinel(url).map_err(|why| format!("sentinel URL {name:?}: {why}"))
    } else if starts(&SINGLE) {
        single(url).map_err(|why| format!("node URL {name:?}: {why}"))
    } else {
        Err(unknown_scheme(&name))
    }
}

/// The words every client uses for a URL of no known scheme (conformance/errors.json).
fn unknown_scheme(name: &str) -> String {
    let schemes = [&SINGLE[..], &CLUSTER, &SENTINEL].concat();
    let (last, known) = schemes.split_last().unwrap_or((&"", &[]));
    let what = if name.contains("://") {
        "an unknown scheme"
    } else {
        "no scheme"
    };
    format!(
        "node URL {name:?} has {what}: use {} or {last}",
        known.join(", ")
    )
}

/// `url` with its scheme in lower case (`REDIS://h` is `redis://h`).
pub fn lowercase_scheme(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
        None => url.to_string(),
    }
}

/// `url` with its password, if any, shown as `***`: in the user part
/// (`redis://app:***@host:6379`) and in a `password=` query parameter.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (netloc, tail) = rest.split_at(end);
    let netloc = match netloc.rsplit_once('@') {
        Some((userinfo, hosts)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{user}:***@{hosts}")
        }
        _ => netloc.to_string(),
    };
    format!("{scheme}://{netloc}{}", redact_query(tail))
}

/// `tail` (path, query, fragment) with the value of each `password=` parameter as `***`.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let (query, fragment) = query
        .split_once('#')
        .map_or((query, None), |(q, f)| (q, Some(f)));
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            _ => pair.to_string(),
        })
        .collect();
    let fragment = fragment.map_or(String::new(), |f| format!("#{f}"));
    format!("{path}?{}{fragment}", pairs.join("&"))
}

fn single(url: &str) -> Result<NodeUrl, String> {
    let (base, query) = split_query(url)?;
    let query = allowed_query(query, &QUERY)?;
    let mut info = base.into_connection_info().map_err(|e| e.to_string())?;
    if let Some(db) = query.get("db") {
        let db = db.parse::<i64>().map_err(|_| format!("bad db {db:?}"))?;
        info = info
            .clone()
            .set_redis_settings(info.redis_settings().clone().set_db(db));
    }
    if let ConnectionAddr::Unix(path) = info.addr() {
        if path.as_os_str().is_empty() {
            return Err("a socket path is required (unix:///path/to/redis.sock)".into());
        }
    }
    reachable(&info)?;
    let client_name = query.get("client_name").cloned();
    Ok(NodeUrl::Single { info, client_name })
}

/// What no server can be: port 0 (connecting to it is refused, so it would only ever count as a
/// node down), a host no DNS name can be, a database number outside what a server's
/// `databases` setting can make (0 to 2^31 - 2: it is an int).
fn reachable(info: &ConnectionInfo) -> Result<(), String> {
    if let ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } = info.addr()
    {
        if *port == 0 {
            return Err("port 0: a server listens on a port from 1 to 65535".into());
        }
        host_name(host)?;
    }
    let db = info.redis_settings().db();
    if !(0..i64::from(i32::MAX)).contains(&db) {
        return Err(format!(
            "database {db}: a database number is from 0 to {} (below the server's databases)",
            i32::MAX - 1
        ));
    }
    Ok(())
}

/// A host that could be looked up: a DNS name is at most 253 bytes, each label at most 63.
fn host_name(host: &str) -> Result<(), String> {
    if host.len() > 253 || host.split('.').any(|label| label.len() > 63) {
        return Err(format!(
            "a host name of {} bytes: a DNS name is at most 253, each label at most 63",
            host.len()
        ));
    }
    Ok(())
}

fn cluster(url: &str) -> Result<NodeUrl, String> {
    let tls = url.starts_with("rediss+");
    let (base, query) = split_query(url)?;
    allowed_query(query, &[])?;
    let rest = base.split_once("://").map_or("", |(_, rest)| rest);
    if rest.split(['/', '@']).any(|part| part.contains(',')) {
        return Err("one seed address only: the others are found from it".into());
    }
    let seed = format!("redis://{rest}")
        .into_connection_info()
        .map_err(|e| e.to_string())?;
    if seed.redis_settings().db() != 0 {
        return Err("Redis Cluster has only database 0".into());
    }
    reachable(&seed)?;
    Ok(NodeUrl::Cluster { seed, tls })
}

fn sentinel(url: &str) -> Result<NodeUrl, String> {
    let tls = url.starts_with("rediss+");
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    if rest.contains(['?', '#']) {
        return Err("query parameters are not supported".into());
    }
    let (hosts, master_name) = rest
        .split_once('/')
        .filter(|(_, name)| !name.is_empty() && !name.contains('/'))
        .ok_or("the master's name is required: .../MASTER_NAME")?;
    let (credentials, hosts) = match hosts.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), hosts),
    };
    let sentinels = hosts
        .split(',')
        .map(sentinel_address)
        .collect::<Result<Vec<_>, String>>()?;
    Ok(NodeUrl::Sentinel(SentinelUrl {
        tls,
        credentials,
        sentinels,
        master_name: master_name.to_string(),
    }))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; port 26379 when none is given.
fn sentinel_address(address: &str) -> Result<(String, u16), String> {
    let (host, port) = match address.rsplit_once(':') {
        Some((host, port)) if !port.ends_with(']') => (host, Some(port)),
        _ => (address, None),
    };
    let host = host.trim_matches(['[', ']']);
    if host.is_empty() {
        return Err(format!("sentinel {address:?}: a host is required"));
    }
    host_name(host)?;
    let port = match port {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("sentinel {address:?}: bad port"))?,
        None => SENTINEL_PORT,
    };
    Ok((host.to_string(), port))
}

/// The URL before its query, and the query's parameters (none twice).
fn split_query(url: &str) -> Result<(&str, HashMap<String, String>), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url, HashMap::new()));
    };
    let mut pairs = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value)?;
        if pairs.insert(key.to_string(), value).is_some() {
            return Err(format!("query parameter {key:?} given twice"));
        }
    }
    Ok((base, pairs))
}

/// `query`, if it names only `allowed` parameters.
fn allowed_query(
    query: HashMap<String, String>,
    allowed: &[&str],
) -> Result<HashMap<String, String>, String> {
    let mut unknown: Vec<&String> = query
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    unknown.sort();
    let Some(first) = unknown.first() else {
        return Ok(query);
    };
    let known = if allowed.is_empty() {
        "none are".to_string()
    } else {
        format!("only {} are", allowed.join(", "))
    };
    Err(format!(
        "query parameter {first:?} is not supported ({known}; timeouts and TLS settings are the manager's options)"
    ))
}

/// `%XX` escapes and `+` (a space) decoded.
fn percent_decode(text: &str) -> Result<String, String> {
    let bad = || format!("bad escape in {text:?}");
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = rest.get(..2).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                rest = &rest[2..];
            }
            _ => bytes.push(b),
        }
    }
    String::from_utf8(bytes).map_err(|_| bad())
}

#[cfg(test)]
#[path = "urls_tests.rs"]
mod tests;
