//! A master with one replica, both with the module, watched by three real Redis Sentinels
//! (`redis-server sentinel.conf --sentinel`), with a short `down-after-milliseconds` so a
//! failover takes seconds, not minutes.

use std::time::{Duration, Instant};

use crate::Server;

/// The name the sentinels know the master by.
pub const MASTER_NAME: &str = "dlockmaster";

pub struct Sentinels {
    /// The data nodes; which one is the master changes with failovers.
    pub nodes: Vec<Server>,
    pub sentinels: Vec<Server>,
    _configs: tempfile::TempDir,
}

impl Sentinels {
    /// Starts the master, its replica (in sync) and three sentinels that agree on the master.
    pub fn start() -> Sentinels {
        let master = Server::builder()
            .config("repl-diskless-sync-delay", "0")
            .start();
        let replica = Server::builder()
            .config("replicaof", &format!("127.0.0.1 {}", master.port()))
            .config("repl-diskless-sync-delay", "0")
            .start();
        let configs = tempfile::tempdir().expect("temp dir");
        let sentinels = (0..3)
            .map(|i| {
                let path = configs.path().join(format!("sentinel-{i}.conf"));
                let text = format!(
                    "sentinel monitor {MASTER_NAME} 127.0.0.1 {port} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                     sentinel failover-timeout {MASTER_NAME} 3000\n\
                     sentinel parallel-syncs {MASTER_NAME} 1\n",
                    port = master.port()
                );
                std::fs::write(&path, text).expect("write sentinel.conf");
                Server::builder().sentinel(&path).start()
            })
            .collect();
        let set = Sentinels {
            nodes: vec![master, replica],
            sentinels,
            _configs: configs,
        };
        set.wait_until(
            Duration::from_secs(20),
            "the replica in sync and known to every sentinel",
            |s| s.sentinels_agree_on(s.nodes[0].port()) && s.replicas_known() && s.in_sync(0),
        );
        set
    }

    /// `redis+sentinel://` URL of the three sentinels.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", hosts.join(","))
    }

    /// Index in `nodes` of the master the sentinels name now.
    pub fn master(&self) -> Option<usize> {
        let port = self.master_port_by(&self.sentinels[0])?;
        self.nodes.iter().position(|n| n.port() == port)
    }

    /// `SENTINEL FAILOVER` (asked again if a sentinel is not ready yet), and back once every
    /// sentinel names the other node and it answers as a master.
    pub fn failover(&self) -> usize {
        let old = self.master().expect("a master");
        let new = 1 - old;
        self.wait_until(Duration::from_secs(30), "a manual failover", |s| {
            if s.master() == Some(old) {
                let _ = redis::cmd("SENTINEL")
                    .arg("FAILOVER")
                    .arg(MASTER_NAME)
                    .exec(&mut s.sentinels[0].conn());
                std::thread::sleep(Duration::from_millis(200));
            }
            s.sentinels_agree_on(s.nodes[new].port()) && s.is_master(new)
        });
        new
    }

    /// Waits until every sentinel names `nodes[index]` and it answers as a master.
    pub fn wait_master(&self, index: usize, within: Duration) {
        self.wait_until(within, "the sentinels to promote the replica", |s| {
            s.sentinels_agree_on(s.nodes[index].port()) && s.is_master(index)
        });
    }

    fn wait_until(&self, within: Duration, what: &str, check: impl Fn(&Sentinels) -> bool) {
        let deadline = Instant::now() + within;
        while !check(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn master_port_by(&self, sentinel: &Server) -> Option<u16> {
        let mut c = redis::Client::open(sentinel.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
            .ok()?;
        let reply: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut c)
            .ok()?;
        reply.map(|(_, port)| port)
    }

    fn sentinels_agree_on(&self, port: u16) -> bool {
        self.sentinels
            .iter()
            .all(|s| self.master_port_by(s) == Some(port))
    }

    fn replicas_known(&self) -> bool {
        self.sentinels.iter().all(|s| {
            redis::cmd("SENTINEL")
                .arg("REPLICAS")
                .arg(MASTER_NAME)
                .query::<Vec<redis::Value>>(&mut s.conn())
                .is_ok_and(|r| !r.is_empty())
        })
    }

    fn is_master(&self, index: usize) -> bool {
        let node = &self.nodes[index];
        node.pid().is_some()
            && redis::cmd("INFO")
                .arg("replication")
                .query::<String>(&mut node.conn())
                .is_ok_and(|info| info.contains("role:master"))
    }

    fn in_sync(&self, master: usize) -> bool {
        redis::cmd("INFO")
            .arg("replication")
            .query::<String>(&mut self.nodes[master].conn())
            .is_ok_and(|info| info.contains("connected_slaves:1") && info.contains("state=online"))
    }
}
