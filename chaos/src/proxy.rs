//! A TCP proxy in front of one node that can delay every chunk and drop connections: a slow,
//! lossy link on loopback.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Knobs changed while traffic flows.
#[derive(Default)]
pub struct Link {
    pub delay_ms: AtomicU64,
    /// Chance in percent that a chunk makes the proxy drop the connection.
    pub drop_percent: AtomicU64,
}

/// Listens on a free loopback port, forwards to `target`; returns the port.
pub async fn start(target: u16, link: Arc<Link>) -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let link = link.clone();
            tokio::spawn(async move {
                if let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)).await {
                    relay(client, upstream, link).await;
                }
            });
        }
    });
    Ok(port)
}

async fn relay(client: TcpStream, upstream: TcpStream, link: Arc<Link>) {
    let (client_read, client_write) = client.into_split();
    let (up_read, up_write) = upstream.into_split();
    tokio::select! {
        _ = pump(client_read, up_write, link.clone()) => {}
        _ = pump(up_read, client_write, link) => {}
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: Arc<Link>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let delay = link.delay_ms.load(Relaxed);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if rand::rng().random_range(0..100) < link.drop_percent.load(Relaxed) {
            return; // the connection dies mid-request
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
