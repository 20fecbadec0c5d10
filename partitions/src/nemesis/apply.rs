//! The nemesis: faults (fault.rs) applied one at a time, each held for a while and then healed,
//! and a timeline of when each was in force. Network faults are nftables rules in the hosts' own
//! tables (topology/net.rs), so healing is flushing two chains; a delay is netem or an NFQUEUE
//! rule and a delayer process (delayer.rs), removed by its guard; process faults are signals to
//! the servers and client processes this run started.

use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::history::{mono_ns, wall_ms, Window};
use crate::names::holding_client;
use crate::nemesis::delayer::{self, Delayed};
use crate::nemesis::fault::{name, Fault};
use crate::topology::cluster::key_master;
use crate::topology::net::{self, nft, Net};
use crate::topology::nodes::Node;

/// What the nemesis acts on.
pub struct Targets<'a> {
    pub net: &'a Net,
    pub nodes: &'a mut [Node],
    /// Client processes' pids: worker id 1 is the first.
    pub clients: Vec<u32>,
    /// Where workers mark that they are inside a critical section (`holding-<id>`).
    pub state_dir: std::path::PathBuf,
    /// The client (worker id) a `PauseHolder` stopped.
    pub stopped: Option<u32>,
}

/// The fault as it is applied: the key's master found now, the partition named with it.
fn resolve(t: &Targets, fault: &Fault) -> Result<(Fault, String), String> {
    let Fault::IsolateKeyMaster { key, with, slow_ms } = fault else {
        return Ok((fault.clone(), name(fault)));
    };
    let addr = key_master(t.nodes, key)?;
    let master = t
        .nodes
        .iter()
        .find(|n| n.host.addr == addr)
        .ok_or_else(|| format!("{addr} is none of this run's nodes"))?;
    let mut a = vec![master.host.name.clone()];
    a.extend(with.iter().cloned());
    // Every other node and client; the register and the control host stay reachable.
    let b = t
        .net
        .hosts
        .iter()
        .map(|h| h.name.clone())
        .filter(|h| (h.starts_with('n') || h.starts_with('c')) && !a.contains(h))
        .filter(|h| h != "ctl")
        .collect();
    let partition = Fault::Partition { a, b };
    let mut named = name(&partition);
    if let Some(ms) = slow_ms {
        slow_down(master, *ms)?;
        named = format!(
            "{named} ({}: cluster-node-timeout {ms} ms)",
            master.host.name
        );
    }
    Ok((partition, named))
}

/// Sets a cluster node's `cluster-node-timeout` (it then takes that long to notice it is cut
/// off from the other masters, and keeps accepting writes meanwhile).
fn slow_down(node: &Node, ms: u64) -> Result<(), String> {
    let mut c = node.conn()?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("cluster-node-timeout")
        .arg(ms)
        .exec(&mut c)
        .map_err(|e| format!("CONFIG SET cluster-node-timeout on {}: {e}", node.host.name))
}

/// Applies `fault`, holds it `hold`, heals it; the window it was in force.
pub fn apply(t: &mut Targets, fault: &Fault, hold: Duration, breaks: Option<String>) -> Window {
    let (start_ns, start_wall_ms) = (mono_ns(), wall_ms());
    let (fault, mut named, skipped, held) = match resolve(t, fault) {
        Ok((f, named)) => match start(t, &f) {
            Ok(held) => (f, named, None, held),
            Err(e) => (f, named, Some(e), None),
        },
        Err(e) => (fault.clone(), name(fault), Some(e), None),
    };
    if let Some(why) = &skipped {
        eprintln!("partitions: {named} skipped: {why}");
    }
    if let Some(d) = &held {
        named = format!("{named} ({})", d.mechanism());
    }
    std::thread::sleep(hold);
    // A delay is healed by its guard (also when this thread unwinds).
    drop(held);
    if let Err(e) = heal(t, &fault) {
        eprintln!("partitions: healing {named} failed: {e}");
    }
    Window {
        name: named,
        start_ns,
        end_ns: mono_ns(),
        start_wall_ms,
        breaks: breaks.filter(|_| skipped.is_none()),
        skipped,
    }
}

fn addrs(net: &Net, names: &[String]) -> String {
    let v: Vec<&str> = names.iter().map(|n| net.host(n).addr.as_str()).collect();
    format!("{{ {} }}", v.join(", "))
}

fn drop_from(net: &Net, at: &[String], from: &[String]) -> Result<(), String> {
    let rule = format!("add rule inet dlp input ip saddr {} drop", addrs(net, from));
    at.iter().try_for_each(|h| nft(&net.host(h).ns, &rule))
}

fn client(t: &Targets, id: u32) -> Option<u32> {
    let index = (id as usize).checked_sub(1)?;
    t.clients.get(index).copied()
}

fn signal(pid: u32, sig: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), sig);
}

/// The processes in client `id`'s namespace: its worker and, for the CLI worker, `dlock run`,
/// its guard and the section it started (all of the client's host).
fn host_pids(t: &Targets, id: u32) -> Vec<u32> {
    let name = format!("c{id}");
    let Some(host) = t.net.hosts.iter().find(|h| h.name == name) else {
        return Vec::new();
    };
    net::run("ip", &["netns", "pids", &host.ns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Signals a client's whole host, not only its worker: a stopped CLI recorder would leave
/// `dlock run` renewing the lease and its command running. The worker is stopped first so it
/// starts nothing new; the namespace is listed twice to catch a process started meanwhile.
fn signal_client(t: &Targets, id: u32, sig: Signal) -> Result<(), String> {
    let pid = client(t, id).ok_or("no such client")?;
    signal(pid, sig);
    for _ in 0..2 {
        host_pids(t, id).into_iter().for_each(|p| signal(p, sig));
    }
    Ok(())
}

/// Applies the fault; a delay returns the guard that removes it.
fn start(t: &mut Targets, fault: &Fault) -> Result<Option<Delayed>, String> {
    match fault {
        Fault::Delay { hosts, ms } => delayer::delay(t.net, hosts, *ms).map(Some),
        _ => inject(t, fault).map(|()| None),
    }
}

fn inject(t: &mut Targets, fault: &Fault) -> Result<(), String> {
    match fault {
        Fault::Partition { a, b } => {
            drop_from(t.net, a, b)?;
            drop_from(t.net, b, a)
        }
        Fault::OneWay { from, to } => drop_from(t.net, to, from),
        Fault::Loss { hosts, percent } => {
            let rule = format!("add rule inet dlp input numgen random mod 100 < {percent} drop");
            hosts.iter().try_for_each(|h| nft(&t.net.host(h).ns, &rule))
        }
        // Applied by `start`, with its guard.
        Fault::Delay { .. } => Ok(()),
        Fault::PauseNodes(n) => {
            n.iter().for_each(|&i| t.nodes[i].pause());
            Ok(())
        }
        Fault::PauseClient(c) => signal_client(t, *c, Signal::SIGSTOP),
        Fault::Crash(n) => {
            n.iter().for_each(|&i| t.nodes[i].crash());
            Ok(())
        }
        Fault::IsolateHolder(with) => isolate_holder(t, with),
        Fault::IsolateKeyMaster { .. } => Err("the key's master was not found".into()),
        Fault::ClockOffset { nodes, ms } => {
            // A step that shortens leases matters only while one is held: land it as a
            // critical section begins, so the holder has its whole hold left; else step anyway.
            let _ = entering_holder(&t.state_dir);
            set_clocks(t, nodes, *ms)
        }
        Fault::PauseHolder => {
            let id = holder(&t.state_dir).ok_or("no client entered a critical section in 3 s")?;
            signal_client(t, id, Signal::SIGSTOP)?;
            t.stopped = Some(id);
            Ok(())
        }
    }
}

/// Writes `ms` into each node's offset file (an index out of range is an error, not a panic).
fn set_clocks(t: &Targets, nodes: &[usize], ms: i64) -> Result<(), String> {
    nodes.iter().try_for_each(|&i| {
        let node = t.nodes.get(i).ok_or(format!("no node {i}"))?;
        node.set_clock_offset(ms)
    })
}

/// Cuts the client inside its critical section, with `with`, off from every other data node
/// and client (`n<i>`, `c<i>`; not `reg` nor `ctl`: the register stays reachable).
fn isolate_holder(t: &Targets, with: &[String]) -> Result<(), String> {
    let id = holder(&t.state_dir).ok_or("no client entered a critical section in 3 s")?;
    let mut a = with.to_vec();
    a.push(format!("c{id}"));
    let numbered = |n: &str| {
        let digits = n.get(1..).unwrap_or("");
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let b: Vec<String> = (t.net.hosts.iter().map(|h| h.name.clone()))
        .filter(|n| numbered(n) && !a.contains(n))
        .collect();
    drop_from(t.net, &a, &b)?;
    drop_from(t.net, &b, &a)
}

/// The id of a client inside its critical section, waiting up to 3 s for one.
fn holder(dir: &std::path::Path) -> Option<u32> {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        let found = std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .find_map(|e| holding_client(e.file_name().to_str()?));
        if found.is_some() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

/// Waits (up to 3 s) for a client to enter its critical section: a mark written after the call,
/// not one already there (that holder could be about to write and leave).
fn entering_holder(dir: &std::path::Path) -> Option<()> {
    let since = std::time::SystemTime::now();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        let fresh = std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .any(|e| {
                let mark = e.file_name().to_str().and_then(holding_client).is_some();
                mark && e
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m >= since)
            });
        if fresh {
            return Some(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

fn heal(t: &mut Targets, fault: &Fault) -> Result<(), String> {
    match fault {
        Fault::Partition { .. }
        | Fault::OneWay { .. }
        | Fault::Loss { .. }
        | Fault::IsolateHolder(_)
        | Fault::IsolateKeyMaster { .. } => {
            let flush = "flush chain inet dlp input\nflush chain inet dlp output\n";
            t.net.hosts.iter().try_for_each(|h| nft(&h.ns, flush))
        }
        // Removed when `apply` drops its guard.
        Fault::Delay { .. } => Ok(()),
        Fault::PauseNodes(n) => {
            n.iter().for_each(|&i| t.nodes[i].resume());
            Ok(())
        }
        Fault::PauseClient(c) => signal_client(t, *c, Signal::SIGCONT),
        Fault::Crash(n) => n.iter().try_for_each(|&i| t.nodes[i].restart()),
        Fault::ClockOffset { nodes, .. } => set_clocks(t, nodes, 0),
        Fault::PauseHolder => match t.stopped.take() {
            Some(id) => signal_client(t, id, Signal::SIGCONT),
            None => Ok(()),
        },
    }
}
