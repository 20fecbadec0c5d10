//! How to reach the nodes beyond what their URLs say: TLS material (a CA bundle, a client
//! certificate and key for mutual TLS, or no verification) and ACL credentials, applied to
//! every node whose URL does not carry its own. Files are read and checked when the settings
//! are made, so a bad one is an error before any node is asked.

use std::fmt;
use std::path::Path;

use redis::{Client, ConnectionAddr, ConnectionInfo};

use crate::errors::Error;

/// TLS settings for `rediss://` (and `rediss+cluster://`) nodes. The default verifies the
/// server's certificate chain against the system's roots and its name against the URL's host.
#[derive(Clone, Default)]
pub struct Tls {
    ca: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
    insecure: bool,
}

impl Tls {
    /// Trust the CA certificates of this PEM bundle instead of the system's roots.
    pub fn ca_pem(mut self, pem: Vec<u8>, name: &str) -> Result<Tls, Error> {
        check_certificates(&pem, name)?;
        self.ca = Some(pem);
        Ok(self)
    }

    /// Present this certificate and key (PEM) to servers that ask for one (mutual TLS,
    /// `tls-auth-clients yes`).
    pub fn client_pem(
        mut self,
        cert: Vec<u8>,
        key: Vec<u8>,
        names: (&str, &str),
    ) -> Result<Tls, Error> {
        check_certificates(&cert, names.0)?;
        check_end_entity(&cert, names.0)?;
        check_key(&key, names.1)?;
        self.client = Some((cert, key));
        Ok(self)
    }

    /// The same from files: `ca` optional, `cert` and `key` both or neither. Each file is read
    /// and parsed now; an error names it.
    pub fn from_files(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Tls, Error> {
        let mut tls = Tls::default();
        if let Some(ca) = ca {
            tls = tls.ca_pem(read(ca)?, &ca.display().to_string())?;
        }
        match (cert, key) {
            (Some(cert), Some(key)) => {
                let names = (cert.display().to_string(), key.display().to_string());
                tls.client_pem(read(cert)?, read(key)?, (&names.0, &names.1))
            }
            (None, None) => Ok(tls),
            (Some(cert), None) => Err(invalid(format!(
                "client certificate {} given without its key",
                cert.display()
            ))),
            (None, Some(key)) => Err(invalid(format!(
                "client key {} given without its certificate",
                key.display()
            ))),
        }
    }

    /// Skip every check of the server's certificate. Unsafe: anyone between the client and the
    /// server can then read and forge the traffic, locks included. For tests only.
    pub fn insecure(mut self, insecure: bool) -> Tls {
        self.insecure = insecure;
        self
    }

    pub(crate) fn is_insecure(&self) -> bool {
        self.insecure
    }

    pub(crate) fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca.clone(),
        }
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("ca", &self.ca.as_ref().map(|_| "<pem>"))
            .field(
                "client",
                &self.client.as_ref().map(|_| "<certificate and key>"),
            )
            .field("insecure", &self.insecure)
            .finish()
    }
}

/// ACL credentials for nodes whose URL names none, and for the sentinels of
/// `redis+sentinel://` nodes (which have their own users and passwords).
#[derive(Clone, Default)]
pub struct Credentials {
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) sentinel_username: Option<String>,
    pub(crate) sentinel_password: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("sentinel_username", &self.sentinel_username)
            .field(
                "sentinel_password",
                &self.sentinel_password.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Everything a node's connections need beyond its URL.
#[derive(Clone, Debug, Default)]
pub struct Connect {
    pub(crate) tls: Tls,
    pub(crate) credentials: Credentials,
    /// How the caller gives a user and password (named in authentication failures); `None`:
    /// the library's own words.
    pub(crate) login_hint: Option<String>,
}

/// How the library's own callers give a user and password, named in authentication failures.
pub const LOGIN_HINT: &str = "user:password@ in the URL, or the builder's username and password";

impl Connect {
    /// How an authentication failure tells the caller to give a user and password.
    pub(crate) fn login_hint(&self) -> &str {
        self.login_hint.as_deref().unwrap_or(LOGIN_HINT)
    }

    /// A client for `info` with these settings: the credentials where the URL has none, and
    /// for a TLS address the certificates (rustls; its crypto provider installed on first use).
    pub(crate) fn client(&self, mut info: ConnectionInfo) -> redis::RedisResult<Client> {
        let settings = info.redis_settings();
        if settings.username().is_none() && settings.password().is_none() {
            let mut redis = settings.clone();
            if let Some(user) = &self.credentials.username {
                redis = redis.set_username(user);
            }
            if let Some(password) = &self.credentials.password {
                redis = redis.set_password(password);
            }
            info = info.set_redis_settings(redis);
        }
        let addr = info.addr().clone();
        match addr {
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure,
                ..
            } => {
                install_crypto_provider();
                let addr = ConnectionAddr::TcpTls {
                    host,
                    port,
                    // `rediss://host/#insecure` in the URL, or the setting for every node.
                    insecure: insecure || self.tls.insecure,
                    tls_params: None,
                };
                Client::build_with_tls(info.set_addr(addr), self.tls.certificates())
            }
            _ => Client::open(info),
        }
    }
}

/// rustls needs one process-wide crypto provider before its first connection (without it,
/// it panics: the panic `dlock --nodes rediss://...` used to show). A provider already
/// installed by the application is kept.
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))
}

fn check_certificates(pem: &[u8], name: &str) -> Result<(), Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut count = 0;
    for certificate in CertificateDer::pem_slice_iter(pem) {
        certificate.map_err(|e| invalid(format!("{name}: not a PEM certificate ({e})")))?;
        count += 1;
    }
    if count == 0 {
        return Err(invalid(format!("{name}: no PEM certificate in it")));
    }
    Ok(())
}

/// The first certificate must be one TLS accepts for a client (X.509 v3).
fn check_end_entity(pem: &[u8], name: &str) -> Result<(), Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let first = CertificateDer::pem_slice_iter(pem)
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| invalid(format!("{name}: no PEM certificate in it")))?;
    webpki::EndEntityCert::try_from(&first)
        .map(|_| ())
        .map_err(|e| invalid(format!("{name}: not a certificate TLS accepts ({e:?})")))
}

fn check_key(pem: &[u8], name: &str) -> Result<(), Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::PrivateKeyDer;
    PrivateKeyDer::from_pem_slice(pem)
        .map(|_| ())
        .map_err(|e| invalid(format!("{name}: not a PEM private key ({e})")))
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}
