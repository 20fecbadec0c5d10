//! Production connections against real servers: mutual TLS (certificates made at test time),
//! ACL users, unix sockets; and every way they are refused, with the reason named per node
//! and no secret in any message.

use crate::common::*;

use std::time::Duration;

use dlock_client::{Error, LockManager, Tls};
use dlock_testkit::{tls_supported, Certificates};

/// Certificates, or `None` (said on stderr) where the server was built without TLS (the
/// `make compat` builds): the TLS tests then check nothing.
fn certificates() -> Option<Certificates> {
    let certs = Certificates::new();
    if tls_supported(&certs) {
        return Some(certs);
    }
    eprintln!("skipped: this redis-server was built without TLS");
    None
}

/// Three masters with the module, each also on a TLS port that asks for a client certificate.
fn tls_nodes(certs: &Certificates) -> (Vec<Server>, Vec<u16>) {
    (0..3)
        .map(|_| {
            let (builder, port) = Server::builder().tls(certs);
            (builder.start(), port)
        })
        .unzip()
}

fn tls_urls(ports: &[u16]) -> Vec<String> {
    ports
        .iter()
        .map(|p| format!("rediss://127.0.0.1:{p}"))
        .collect()
}

fn mutual(certs: &Certificates) -> Tls {
    Tls::from_files(
        Some(&certs.path("ca.crt")),
        Some(&certs.path("client.crt")),
        Some(&certs.path("client.key")),
    )
    .expect("valid certificate files")
}

/// The reasons a manager failed, one per node that failed before the round gave up.
async fn refusal(locks: LockManager) -> Vec<String> {
    match locks.try_lock("r", TTL).await {
        Err(Error::NoQuorum { failures, .. }) => failures.into_iter().map(|f| f.reason).collect(),
        other => panic!(
            "expected NoQuorum, got {:?}",
            other.map(|g| g.owner().to_string())
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_over_mutual_tls_locks_extends_watches_and_releases() {
    let Some(certs) = certificates() else {
        return;
    };
    let (servers, ports) = tls_nodes(&certs);
    let locks = LockManager::builder(tls_urls(&ports))
        .timeout(Duration::from_secs(1))
        .tls(mutual(&certs))
        .build()
        .unwrap();
    let mut guard = locks
        .try_lock("orders:1", TTL)
        .await
        .expect("lock over TLS");
    let token = guard.token().await.expect("committed over TLS");
    for server in &servers {
        let fenced = || token_on(server, "orders:1") == Some(token);
        eventually("committed over TLS on every node", fenced).await;
    }
    guard.extend(TTL).await.expect("extend over TLS");
    guard.release().await.expect("release over TLS");
    assert!(servers.iter().all(|s| token_on(s, "orders:1").is_none()));
    let ran = locks
        .with_lock(
            "orders:2",
            Duration::from_millis(600),
            Duration::ZERO,
            |_ctx| async {
                tokio::time::sleep(Duration::from_millis(1_500)).await; // past the TTL: the watchdog
                42
            },
        )
        .await
        .expect("with_lock over TLS");
    assert_eq!(ran, 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_refusals_name_the_tls_failure_per_node() {
    let Some(certs) = certificates() else {
        return;
    };
    let (_servers, ports) = tls_nodes(&certs);
    let build = |tls: Tls, urls: Vec<String>| {
        LockManager::builder(urls)
            .timeout(Duration::from_secs(1))
            .tls(tls)
            .build()
            .unwrap()
    };
    let untrusted = Tls::from_files(Some(&certs.path("other-ca.crt")), None, None).unwrap();
    for reason in refusal(build(untrusted, tls_urls(&ports))).await {
        assert!(
            reason.contains("invalid peer certificate") && reason.contains("UnknownIssuer"),
            "{reason}"
        );
    }
    let no_client_cert = Tls::from_files(Some(&certs.path("ca.crt")), None, None).unwrap();
    for reason in refusal(build(no_client_cert, tls_urls(&ports))).await {
        assert!(reason.contains("CertificateRequired"), "{reason}");
    }
    let plain: Vec<String> = ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    for reason in refusal(build(mutual(&certs), plain)).await {
        assert!(
            reason.contains("is it a TLS port? then use rediss://"),
            "{reason}"
        );
    }
    // The server's certificate names 127.0.0.1 only.
    let wrong_name: Vec<String> = ports
        .iter()
        .map(|p| format!("rediss://localhost:{p}"))
        .collect();
    for reason in refusal(build(mutual(&certs), wrong_name)).await {
        assert!(reason.contains("not valid for name"), "{reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificate_files_are_refused_naming_the_file_before_any_node_is_asked() {
    let certs = Certificates::new();
    let (ca, cert, key) = (
        certs.path("ca.crt"),
        certs.path("client.crt"),
        certs.path("client.key"),
    );
    let missing = certs.path("missing.pem");
    let cases = [
        (
            Tls::from_files(None, Some(&cert), None),
            "given without its key",
        ),
        (
            Tls::from_files(None, None, Some(&key)),
            "given without its certificate",
        ),
        (Tls::from_files(Some(&missing), None, None), "cannot read"),
        (
            Tls::from_files(Some(&key), None, None),
            "no PEM certificate",
        ),
        (
            Tls::from_files(Some(&ca), Some(&cert), Some(&ca)),
            "not a PEM private key",
        ),
    ];
    for (result, expected) in cases {
        match result {
            Err(Error::InvalidArgument(why)) => {
                let dir = certs.dir().to_str().unwrap();
                assert!(why.contains(expected) && why.contains(dir), "{why}");
            }
            other => panic!("expected a bad argument ({expected}), got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_users_apply_where_urls_name_none_and_a_wrong_password_is_named_not_shown() {
    let servers = nodes(3);
    for server in &servers {
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("app")
            .arg("on")
            .arg(">s3cret-pass")
            .arg("~*")
            .arg("+@all")
            .exec(&mut server.conn())
            .unwrap();
    }
    let mut with_user = urls(&servers);
    with_user[2] = format!("redis://app:s3cret-pass@127.0.0.1:{}", servers[2].port());
    let locks = LockManager::builder(with_user)
        .username("app")
        .password("s3cret-pass")
        .build()
        .unwrap();
    let guard = locks
        .try_lock("r", TTL)
        .await
        .expect("granted to the ACL user");
    guard.release().await.unwrap();

    let wrong = LockManager::builder(urls(&servers))
        .username("app")
        .password("not-the-password")
        .build()
        .unwrap();
    for reason in refusal(wrong).await {
        assert!(
            reason.contains("authentication failed (wrong user or password)"),
            "{reason}"
        );
        assert!(
            !reason.contains("not-the-password"),
            "the password leaked: {reason}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_is_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let server = Server::builder()
        .config("unixsocket", socket.to_str().unwrap())
        .config("unixsocketperm", "700")
        .start();
    let locks = LockManager::new([format!("unix://{}", socket.display())]).unwrap();
    let guard = locks
        .try_lock("r", TTL)
        .await
        .expect("lock over the socket");
    assert_eq!(token_on(&server, "r"), Some(guard.token().await.unwrap()));
    guard.release().await.unwrap();
}
