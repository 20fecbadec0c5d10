//! A Sentinel-managed master with two replicas, a sentinel next to each data node (as on three
//! machines), which the clients reach as one `redis+sentinel://` node.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::topology::net::Host;
use crate::topology::nodes::{control_conn, Node, NodeConfig, PORT};

pub const MASTER_NAME: &str = "dlpmaster";
const SENTINEL_PORT: u16 = 26379;

/// Starts the master on the first host, a replica on each other, a sentinel beside each, and
/// waits until the set has settled.
pub fn deploy(hosts: &[&Host], config: &NodeConfig) -> Result<(Vec<Node>, Vec<Sentinel>), String> {
    let master = &hosts[0].addr;
    let mut nodes = vec![Node::start(hosts[0], config.clone())?];
    for h in &hosts[1..] {
        let mut c = config.clone();
        c.extra
            .push(("replicaof".into(), format!("{master} {PORT}")));
        nodes.push(Node::start(h, c)?);
    }
    let sentinels = hosts
        .iter()
        .map(|h| Sentinel::start(h, master))
        .collect::<Result<Vec<_>, _>>()?;
    wait(Duration::from_secs(30), || {
        settled(&nodes, &sentinels, master)
    })?;
    Ok((nodes, sentinels))
}

/// The URL of the set through its sentinels, `first` listed first.
pub fn url(sentinels: &[Sentinel], first: usize) -> String {
    let mut addrs: Vec<String> = sentinels.iter().map(Sentinel::address).collect();
    let first = first % addrs.len().max(1);
    addrs.rotate_left(first);
    format!("redis+sentinel://{}/{MASTER_NAME}", addrs.join(","))
}

fn wait(within: Duration, check: impl Fn() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while !check() {
        if Instant::now() > deadline {
            return Err("the sentinel set did not settle within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Both replicas in sync and every sentinel naming the master and knowing two replicas.
fn settled(nodes: &[Node], sentinels: &[Sentinel], master: &str) -> bool {
    let info = query::<String>(&nodes[0].url(), &["INFO", "replication"]);
    let synced = info.is_some_and(|i| i.contains("connected_slaves:2"));
    synced
        && sentinels.iter().all(|s| {
            let named = query::<(String, u16)>(
                &s.url(),
                &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME],
            );
            let replicas =
                query::<Vec<redis::Value>>(&s.url(), &["SENTINEL", "REPLICAS", MASTER_NAME]);
            named.is_some_and(|(a, _)| a == master) && replicas.is_some_and(|r| r.len() == 2)
        })
}

fn query<T: redis::FromRedisValue>(url: &str, args: &[&str]) -> Option<T> {
    let mut c = control_conn(url).ok()?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut c).ok()
}

/// A Redis Sentinel in a host's namespace (no module), on its own config file.
pub struct Sentinel {
    host: Host,
    _dir: tempfile::TempDir,
    child: Child,
}

impl Sentinel {
    fn start(host: &Host, master: &str) -> Result<Sentinel, String> {
        let dir = tempfile::Builder::new()
            .prefix("dlp-sentinel-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let conf = dir.path().join("sentinel.conf");
        // A failover within seconds of the master's isolation, not minutes.
        let text = format!(
            "sentinel monitor {MASTER_NAME} {master} {PORT} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
             sentinel failover-timeout {MASTER_NAME} 3000\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n"
        );
        std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &host.ns])
            .arg(dlock_testkit::server_binary())
            .arg(&conf)
            .arg("--sentinel")
            .args(["--port", &SENTINEL_PORT.to_string(), "--bind", &host.addr])
            .arg("--dir")
            .arg(dir.path())
            .args(["--logfile", "sentinel.log", "--protected-mode", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("sentinel on {}: {e}", host.name))?;
        Ok(Sentinel {
            host: host.clone(),
            _dir: dir,
            child,
        })
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.address())
    }

    fn address(&self) -> String {
        format!("{}:{SENTINEL_PORT}", self.host.addr)
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
