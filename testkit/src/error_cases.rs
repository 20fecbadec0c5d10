//! The cases of conformance/errors.json (what each client says when a lock cannot be had), and
//! the server each one runs against, for the Rust client's and the CLI's runners.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::{free_port, tls_supported, Certificates, Server};

/// The password of the `password` servers.
pub const PASSWORD: &str = "right-password";

/// One case, read from the table.
#[derive(Debug, Clone)]
pub struct ErrorCase {
    pub situation: String,
    server: String,
    /// The nodes' URLs, in order (the table's `url`: one URL, or a list of them).
    urls: Vec<String>,
    pub timeout: Duration,
    pub wait: Option<Duration>,
    /// The call must end within it, however long it may wait (the table's `within_ms`).
    pub within: Option<Duration>,
    /// The resource asked for (and held first): `r` unless the case names another.
    pub resource: String,
    /// The TTL asked for: 10 s unless the case gives `ttl_ms`.
    pub ttl: Duration,
    /// `CONFIG SET` pairs for the case's server (a `module` server's `dlock.max-ttl-ms`, say).
    config: Vec<(String, String)>,
    pub password: Option<String>,
    /// The kind taken first by another manager: `None` (free), or `Some(None)` for the exclusive
    /// lock and `Some(Some(k))` for a semaphore's permit of limit k.
    pub held: Option<Option<u32>>,
    /// The kind asked: `None` exclusive, `Some(k)` a semaphore's permit.
    pub ask: Option<u32>,
    /// `no_quorum`, `invalid_argument`, `contended` or `wrong_kind`.
    pub error: String,
    words: Vec<String>,
    absent: Vec<String>,
}

/// A case's server, running until dropped, and what its placeholders stand for.
pub struct Setup {
    /// The first node's URL (`{node}`).
    pub url: String,
    /// Every node's URL, in order.
    pub urls: Vec<String>,
    port: u16,
    _server: Option<Server>,
    _certificates: Option<Certificates>,
}

/// Every case of conformance/errors.json.
pub fn error_cases() -> Vec<ErrorCase> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/errors.json");
    let text = std::fs::read_to_string(&path).expect("read conformance/errors.json");
    let table: Value = serde_json::from_str(&text).expect("conformance/errors.json is JSON");
    let cases = table["cases"].as_array().expect("cases");
    cases.iter().map(ErrorCase::read).collect()
}

fn kind(value: &Value) -> Option<u32> {
    value["limit"].as_u64().map(|k| k as u32)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A case's `config`: `{"name": "value", ...}`.
fn config(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .map(|pairs| {
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

impl ErrorCase {
    fn read(case: &Value) -> ErrorCase {
        let text = |key: &str| case[key].as_str().unwrap_or_default().to_string();
        let millis = |key: &str| case[key].as_u64().map(Duration::from_millis);
        ErrorCase {
            situation: text("situation"),
            server: text("server"),
            urls: match case["url"].as_array() {
                Some(_) => strings(&case["url"]),
                None => vec![text("url")],
            },
            timeout: millis("timeout_ms").expect("timeout_ms"),
            wait: millis("wait_ms"),
            within: millis("within_ms"),
            resource: case["resource"].as_str().unwrap_or("r").to_string(),
            ttl: millis("ttl_ms").unwrap_or(Duration::from_secs(10)),
            config: config(&case["config"]),
            password: case["password"].as_str().map(String::from),
            held: (!case["held"].is_null()).then(|| kind(&case["held"])),
            ask: kind(&case["ask"]),
            error: text("error"),
            words: strings(&case["words"]),
            absent: strings(&case["absent"]),
        }
    }

    /// Starts the case's server (none for `none`; `None` when this server build has no TLS).
    pub fn start(&self) -> Option<Setup> {
        let (server, port, certificates) = match self.server.as_str() {
            "none" => (None, free_port(), None),
            "module" => {
                let server = Server::start();
                for (name, value) in &self.config {
                    redis::cmd("CONFIG")
                        .arg(&["SET", name, value])
                        .query::<()>(&mut server.conn())
                        .expect("configure the server");
                }
                let port = server.port();
                (Some(server), port, None)
            }
            "password" => {
                let server = Server::start();
                redis::cmd("CONFIG")
                    .arg(&["SET", "requirepass", PASSWORD])
                    .query::<()>(&mut server.conn())
                    .expect("set the password");
                let port = server.port();
                (Some(server), port, None)
            }
            "tls" => {
                let certificates = Certificates::new();
                if !tls_supported(&certificates) {
                    return None;
                }
                let (builder, port) = Server::builder().tls(&certificates);
                (Some(builder.start()), port, Some(certificates))
            }
            other => panic!("{}: unknown server {other:?}", self.situation),
        };
        let urls: Vec<String> = (self.urls.iter())
            .map(|url| url.replace("{port}", &port.to_string()))
            .collect();
        Some(Setup {
            url: urls.first().cloned().unwrap_or_default(),
            urls,
            port,
            _server: server,
            _certificates: certificates,
        })
    }

    /// Checks the call ended within the case's `within_ms`, if it gives one (`took`: its
    /// duration, measured by the runner).
    pub fn check_duration(&self, took: Duration) {
        if let Some(within) = self.within {
            assert!(
                took <= within,
                "{}: the call took {took:?}, more than {within:?}",
                self.situation
            );
        }
    }

    /// Checks `message` has every word and none of the absent ones (placeholders filled in).
    pub fn check(&self, setup: &Setup, message: &str) {
        let fill = |w: &String| {
            w.replace("{node}", &setup.url)
                .replace("{port}", &setup.port.to_string())
        };
        for word in self.words.iter().map(fill) {
            assert!(
                message.contains(&word),
                "{}: {word:?} is not in {message:?}",
                self.situation
            );
        }
        for word in self.absent.iter().map(fill) {
            assert!(
                !message.contains(&word),
                "{}: {word:?} is in {message:?}",
                self.situation
            );
        }
    }
}
