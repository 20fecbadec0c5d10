//! A node a little slower than the per-node timeout allows for a connection's whole setup
//! (issue 48 F3): a proxy adding 30 ms to every reply in front of a real redis-server. The
//! handshake, the run_id's round trip and the request each fit the 50 ms default, but not all
//! three in one: each call then gave up before its request was sent, the first round's grant
//! there was never released, and a free lock read as held by another owner for the whole wait.

use std::time::{Duration, Instant};

use dlock_client::LockManager;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{token_on, Server, TTL};

/// Listens on a port of its own and forwards every connection to `upstream`, each chunk of
/// replies `delay` late (in order); requests pass at once. Runs until the test's runtime ends.
async fn slow_proxy(upstream: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                continue;
            };
            let (mut client_in, mut client_out) = client.into_split();
            let (mut server_in, mut server_out) = server.into_split();
            tokio::spawn(async move { tokio::io::copy(&mut client_in, &mut server_out).await });
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = server_in.read(&mut buffer).await {
                    tokio::time::sleep(delay).await;
                    if client_out.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_slower_than_the_timeout_allows_for_setup_and_request_in_one_still_grants() {
    let (slow, fast) = (Server::start(), Server::start());
    let proxy = slow_proxy(slow.port(), Duration::from_millis(30)).await;
    let nodes = vec![format!("redis://127.0.0.1:{proxy}"), fast.url()];
    let locks = LockManager::builder(&nodes)
        .timeout(Duration::from_millis(50))
        .build()
        .expect("a manager");
    let started = Instant::now();
    let asked = locks.lock("r", TTL, Duration::from_secs(3));
    let guard = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("an answer within 10 s")
        .expect("a free lock is granted");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "granted only after {:?}",
        started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(5), guard.release())
        .await
        .expect("released within 5 s")
        .expect("released");
    assert_eq!(token_on(&slow, "r"), None, "a grant left on the slow node");
}
