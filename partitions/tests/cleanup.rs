//! Nothing the suite makes outlives it: a run that unwinds removes its namespaces, servers and
//! rules (Drop), and one that was SIGKILLed is cleaned by the next start (`clean_leftovers`).
//! Root only (network namespaces); without root each test says so and passes.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use dlock_partitions::nemesis::apply::{self, Targets};
use dlock_partitions::nemesis::fault::Fault;
use dlock_partitions::topology::net::{self, Net};
use dlock_partitions::topology::nodes::{Node, NodeConfig};
use dlock_partitions::topology::{self, Topology};

/// The tests share the `dlp-` names: one at a time.
static ONE: Mutex<()> = Mutex::new(());

fn root() -> bool {
    let me = nix::unistd::Uid::effective().is_root();
    if !me {
        eprintln!("skipped: network namespaces need root");
    }
    me
}

/// Processes whose command line names our test range (servers bind to it).
fn our_processes() -> Vec<String> {
    let out = Command::new("ps")
        .args(["-eo", "pid,args"])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("10.231.0.") && !l.contains(" ps "))
        .map(str::to_string)
        .collect()
}

fn host_links() -> String {
    let out = Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("ip link");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_unwinding_run_leaves_nothing() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let links_before = host_links();
    let result = std::panic::catch_unwind(|| {
        let net = Net::create(&["n1", "n2", "ctl"]).expect("the network");
        let config = NodeConfig {
            aof: true,
            quarantine_ms: 0,
            extra: Vec::new(),
            clock_shim: None,
        };
        let mut nodes = vec![Node::start(net.host("n1"), config).expect("a node")];
        assert!(!our_processes().is_empty(), "the node runs");
        let mut t = Targets {
            net: &net,
            nodes: &mut nodes,
            clients: Vec::new(),
            state_dir: std::env::temp_dir(),
            stopped: None,
        };
        // Faults in force when the run dies: a partition rule and a stopped server.
        let part = Fault::Partition {
            a: vec!["n1".into()],
            b: vec!["n2".into()],
        };
        apply::apply(&mut t, &part, std::time::Duration::ZERO, None);
        nodes[0].pause();
        panic!("the run dies here");
    });
    assert!(result.is_err());
    assert_eq!(net::leftovers(), Vec::<String>::new(), "namespaces left");
    assert_eq!(our_processes(), Vec::<String>::new(), "processes left");
    assert_eq!(
        net::leftover_dirs(),
        Vec::<PathBuf>::new(),
        "temp dirs left"
    );
    assert_eq!(host_links(), links_before, "the host's links changed");
}

/// The cluster's six nodes (and their `nodes.conf`, in their temp dirs) go with an unwinding run.
#[test]
fn an_unwinding_cluster_leaves_nothing() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let result = std::panic::catch_unwind(|| {
        let names = ["n1", "n2", "n3", "n4", "n5", "n6", "ctl"];
        let net = Net::create(&names).expect("the network");
        let config = NodeConfig {
            aof: true,
            quarantine_ms: 0,
            extra: Vec::new(),
            clock_shim: None,
        };
        let cluster = topology::deploy(Topology::Cluster { replicas: 1 }, &net, &config)
            .expect("the cluster");
        assert_eq!(cluster.nodes.len(), 6);
        assert!(!net::leftover_dirs().is_empty(), "the nodes' dirs exist");
        panic!("the run dies here");
    });
    assert!(result.is_err());
    assert_eq!(net::leftovers(), Vec::<String>::new(), "namespaces left");
    assert_eq!(our_processes(), Vec::<String>::new(), "processes left");
    assert_eq!(
        net::leftover_dirs(),
        Vec::<PathBuf>::new(),
        "temp dirs left"
    );
}

#[test]
fn a_killed_run_is_cleaned_by_the_next_start() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let net = Net::create(&["n1", "ctl"]).expect("the network");
    let mut sleeper = Command::new("ip")
        .args(["netns", "exec", "dlp-n1", "sleep", "600"])
        .spawn()
        .expect("a process in a namespace");
    let dir = tempfile::Builder::new()
        .prefix("dlp-redis-")
        .tempdir()
        .expect("a node's dir")
        .keep();
    // What SIGKILL of the suite leaves: no Drop ran.
    std::mem::forget(net);
    assert_eq!(net::leftovers().len(), 3, "dlp-sw, dlp-n1, dlp-ctl");
    assert_eq!(net::clean_leftovers(), 3);
    assert_eq!(net::leftovers(), Vec::<String>::new());
    assert!(!dir.exists(), "the node's dir is removed");
    // Killed with its namespace: it ends within a moment (a kept sleep would last 600 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while sleeper.try_wait().expect("try_wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the process in it still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
