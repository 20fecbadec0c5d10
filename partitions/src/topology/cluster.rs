//! A Redis Cluster of three masters and three replicas, one node per host (n1..n6), made the
//! way an operator makes one: `redis-cli --cluster create ... --cluster-replicas 1`, run from
//! the control host. The clients reach it as one `redis+cluster://` node through a seed.

use std::time::{Duration, Instant};

use crate::topology::net::{run_in, Host};
use crate::topology::nodes::{control_conn, Node, NodeConfig, CONTROL, PORT};

/// `cluster-node-timeout`. Short, so that a partitioned master is replaced within seconds and a
/// run fits in 30 s (the promotion takes the timeout, the failure reports' gossip and the
/// replica's election delay of 0.5-1 s); not shorter, because on the shared 2-core machine a
/// node that misses its pings for a whole timeout would be failed over outside any fault.
pub const NODE_TIMEOUT_MS: u64 = 1_000;

/// Starts the six nodes, joins them (3 masters, 1 replica each), waits until every node agrees
/// and every replica is in sync. `key`: the lock's key, whose master is the first client's seed.
/// The nodes, and one seed URL per client.
pub fn deploy(
    hosts: &[&Host],
    config: &NodeConfig,
    key: &str,
) -> Result<(Vec<Node>, Vec<String>), String> {
    let nodes = hosts
        .iter()
        .map(|h| Node::start(h, node_config(config, h)))
        .collect::<Result<Vec<_>, _>>()?;
    let addrs: Vec<String> = hosts.iter().map(|h| format!("{}:{PORT}", h.addr)).collect();
    let mut args = vec!["--cluster", "create"];
    args.extend(addrs.iter().map(String::as_str));
    args.extend(["--cluster-replicas", "1", "--cluster-yes"]);
    run_in(CONTROL, "redis-cli", &args)?;
    settle(&nodes)?;
    let master = key_master(&nodes, key)?;
    // One seed per client, as if each ran beside a node: c1 beside the lock's master (the fault
    // isolates them together), c2 and c3 beside nodes of the majority. The client reads the slot
    // map only from its seed and the masters it has used, so a client whose seed is cut off
    // from it cannot find the slot's master once it has given up on it: c1 seeded on the
    // majority side lost its way back to the old master (an availability question), and a
    // majority client seeded on the old master would never find the promoted one.
    let mut seeds: Vec<&&Host> = hosts.iter().filter(|h| h.addr == master).collect();
    seeds.extend(hosts.iter().filter(|h| h.addr != master));
    let urls = seeds
        .iter()
        .map(|h| format!("redis+cluster://{}:{PORT}", h.addr))
        .collect();
    Ok((nodes, urls))
}

fn node_config(config: &NodeConfig, host: &Host) -> NodeConfig {
    let mut c = config.clone();
    c.extra.extend([
        ("cluster-enabled".into(), "yes".into()),
        // Inside the node's own temp dir: removed with it.
        ("cluster-config-file".into(), "nodes.conf".into()),
        ("cluster-node-timeout".into(), NODE_TIMEOUT_MS.to_string()),
        ("cluster-announce-ip".into(), host.addr.clone()),
    ]);
    c
}

/// Waits (30 s at most) until every node reports the cluster ok, every replica's link is up, and
/// all six name the same masters, replicas and slots. `cluster_state:ok` alone is not enough:
/// right after `--cluster create` a master can still take a replica for a master and deny it
/// its vote, and the failover the fault needs would not happen.
fn settle(nodes: &[Node]) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(nodes.iter().all(healthy) && agree(nodes)) {
        if Instant::now() > deadline {
            return Err("the cluster did not settle within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn healthy(node: &Node) -> bool {
    let Ok(mut c) = node.conn() else {
        return false;
    };
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(&mut c)
        .unwrap_or_default();
    let repl: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut c)
        .unwrap_or_default();
    info.contains("cluster_state:ok")
        && info.contains("cluster_slots_ok:16384")
        && (repl.contains("role:master") || repl.contains("master_link_status:up"))
}

fn agree(nodes: &[Node]) -> bool {
    let views: Vec<Option<Vec<String>>> = nodes.iter().map(|n| view(&n.url())).collect();
    views.first().is_some_and(|first| {
        first.as_ref().is_some_and(|f| f.len() == nodes.len()) && views.iter().all(|v| v == first)
    })
}

/// One node's `CLUSTER NODES`, reduced to what every node must agree on: id, role, master,
/// slots; None if a node is still in handshake or suspected failing.
fn view(url: &str) -> Option<Vec<String>> {
    let text = cluster_nodes(url)?;
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(' ').collect();
        let flags = f.get(2)?;
        if ["fail", "handshake", "noaddr"]
            .iter()
            .any(|x| flags.contains(x))
        {
            return None;
        }
        let role = if flags.contains("master") { "m" } else { "r" };
        let slots = f.get(8..).unwrap_or_default().join(",");
        rows.push(format!("{} {role} {} {slots}", f[0], f.get(3)?));
    }
    rows.sort();
    Some(rows)
}

fn cluster_nodes(url: &str) -> Option<String> {
    let mut c = control_conn(url).ok()?;
    redis::cmd("CLUSTER").arg("NODES").query(&mut c).ok()
}

/// The address of the master serving `key`'s slot, by the first node that answers (asked from
/// the control host: `CLUSTER KEYSLOT`, then `CLUSTER NODES`).
pub fn key_master(nodes: &[Node], key: &str) -> Result<String, String> {
    let mut reasons = Vec::new();
    for node in nodes {
        match master_by(&node.url(), key) {
            Ok(addr) => return Ok(addr),
            Err(e) => reasons.push(format!("{}: {e}", node.host.name)),
        }
    }
    Err(format!(
        "no node named the master of {key:?}: {}",
        reasons.join("; ")
    ))
}

fn master_by(url: &str, key: &str) -> Result<String, String> {
    let mut c = control_conn(url)?;
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut c)
        .map_err(|e| format!("CLUSTER KEYSLOT: {e}"))?;
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut c)
        .map_err(|e| format!("CLUSTER NODES: {e}"))?;
    text.lines()
        .map(|l| l.split(' ').collect::<Vec<&str>>())
        .find(|f| {
            let master = f
                .get(2)
                .is_some_and(|fl| fl.contains("master") && !fl.contains("fail"));
            master
                && f.get(8..)
                    .unwrap_or_default()
                    .iter()
                    .any(|r| serves(r, slot))
        })
        .and_then(|f| Some(f.get(1)?.split(':').next()?.to_string()))
        .ok_or_else(|| format!("no master serves slot {slot}"))
}

/// Whether a `CLUSTER NODES` slot field (`5461-10922`, `42`, or an `[importing]` mark) holds it.
fn serves(range: &str, slot: u16) -> bool {
    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
    match (lo.parse::<u16>(), hi.parse::<u16>()) {
        (Ok(lo), Ok(hi)) => (lo..=hi).contains(&slot),
        _ => false,
    }
}
