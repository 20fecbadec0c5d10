//! TLS material made at test time (rcgen): a CA, a server certificate for 127.0.0.1 only
//! (so `localhost` is a name it is not valid for), a client certificate for mutual TLS, and another CA that trusts none of them;
//! and servers that listen on a TLS port besides their plain one (which the harness uses).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
};

use crate::{free_port, server_binary, Builder};

/// PEM files in a temp dir, removed on drop.
pub struct Certificates {
    dir: tempfile::TempDir,
}

impl Certificates {
    /// Makes the files: `ca.crt`, `server.crt` / `server.key`, `client.crt` / `client.key`,
    /// and `other-ca.crt` (a CA that signed none of them).
    pub fn new() -> Certificates {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = authority("dlock test CA");
        let server = leaf(&ca, &["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
        let client = leaf(&ca, &["dlock-client"], ExtendedKeyUsagePurpose::ClientAuth);
        let other = authority("a CA nobody trusts");
        let write = |name: &str, pem: String| {
            std::fs::write(dir.path().join(name), pem).expect("write pem")
        };
        write("ca.crt", ca.pem());
        write("server.crt", server.0);
        write("server.key", server.1);
        write("client.crt", client.0);
        write("client.key", client.1);
        write("other-ca.crt", other.pem());
        Certificates { dir }
    }

    /// The path of one of the files.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Whether the server binary under test was built with TLS (Debian's is; `make compat-servers`
/// builds with `BUILD_TLS=no`): a TLS port is tried, and such a build exits at once saying so.
pub fn tls_supported(certificates: &Certificates) -> bool {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let file = |name: &str| certificates.path(name).display().to_string();
    let child = Command::new(server_binary())
        .args([
            "--port",
            "0",
            "--save",
            "",
            "--tls-port",
            &free_port().to_string(),
        ])
        .args([
            "--tls-cert-file",
            &file("server.crt"),
            "--tls-key-file",
            &file("server.key"),
        ])
        .args(["--tls-ca-cert-file", &file("ca.crt")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let deadline = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false; // exited: "Failed finding TLS support"
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    true
}

impl Default for Certificates {
    fn default() -> Self {
        Certificates::new()
    }
}

fn authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key"))
        .expect("CA certificate")
}

/// A certificate (PEM) and its key (PEM) for `names`, signed by `ca`.
fn leaf(
    ca: &CertifiedIssuer<'_, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).expect("leaf params");
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().expect("leaf key");
    let certificate = params.signed_by(&key, ca).expect("leaf certificate");
    (certificate.pem(), key.serialize_pem())
}

impl Builder {
    /// Also listens on a TLS port with `certificates`' server certificate, asking clients for
    /// one signed by its CA (`tls-auth-clients yes`); returns the TLS port.
    pub fn tls(self, certificates: &Certificates) -> (Builder, u16) {
        let port = free_port();
        let file = |name: &str| certificates.path(name).display().to_string();
        let builder = self
            .config("tls-port", &port.to_string())
            .config("tls-cert-file", &file("server.crt"))
            .config("tls-key-file", &file("server.key"))
            .config("tls-ca-cert-file", &file("ca.crt"))
            .config("tls-auth-clients", "yes");
        (builder, port)
    }
}
