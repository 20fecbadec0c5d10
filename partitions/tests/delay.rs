//! The delay fault delays for real: a TCP round trip between two hosts on the bridge goes from
//! about nothing to at least the delay while it is in force, and back after the heal, and
//! nothing (rule, delayer, namespace) is left. Root only; without root it says so and passes.
//! Run under `flock /tmp/dlock-partitions.lock` (it makes `dlp-` namespaces).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dlock_partitions::nemesis::delayer;
use dlock_partitions::topology::net::{self, Net};

const PORT: u16 = 7100;

/// The tests share the `dlp-` names: one at a time.
static ONE: Mutex<()> = Mutex::new(());

/// An echo server on `host`'s address, inside its namespace.
fn echo_server(net: &Net, host: &str) -> String {
    let addr = format!("{}:{PORT}", net.host(host).addr);
    let bind = addr.clone();
    let listener = net::inside(&net.host(host).ns, move || TcpListener::bind(bind))
        .expect("the namespace")
        .expect("bind");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = stream;
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = s.read(&mut buf) {
                    if s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// What each test starts from: the tests' turn, hosts n1 and n2, and a connection from n1 to an
/// echo server on n2. `None` (said) without root.
fn two_hosts() -> Option<(MutexGuard<'static, ()>, Net, TcpStream)> {
    let one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("skipped: network namespaces need root");
        return None;
    }
    // This test binary has no `delayer` subcommand: the suite's binary does.
    std::env::set_var(
        "DLOCK_PARTITIONS_EXE",
        env!("CARGO_BIN_EXE_dlock-partitions"),
    );
    let net = Net::create(&["n1", "n2"]).expect("the network");
    let addr = echo_server(&net, "n2");
    let stream = net::inside(&net.host("n1").ns, move || TcpStream::connect(addr))
        .expect("the namespace")
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    Some((one, net, stream))
}

/// The slowest of a few round trips (one byte out, one back).
fn rtt(stream: &mut TcpStream) -> Duration {
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let t = Instant::now();
        stream.write_all(b"x").expect("write");
        let mut b = [0u8; 1];
        stream.read_exact(&mut b).expect("read");
        worst = worst.max(t.elapsed());
    }
    worst
}

fn pids(ns: &str) -> String {
    net::run("ip", &["netns", "pids", ns]).unwrap_or_default()
}

#[test]
fn a_delay_delays_the_hosts_packets_and_heals() {
    let Some((_one, net, mut stream)) = two_hosts() else {
        return;
    };
    let before = rtt(&mut stream);

    let delayed = delayer::delay(&net, &["n1".to_string()], 100).expect("the delay");
    let during = rtt(&mut stream);
    let mechanism = delayed.mechanism();
    let rule = net::run_in(&net.host("n1").ns, "iptables", &["-S", "OUTPUT"]).unwrap_or_default();
    drop(delayed);
    let after = rtt(&mut stream);
    eprintln!("rtt before {before:?}, during ({mechanism}) {during:?}, after {after:?}");

    assert!(before < Duration::from_millis(50), "before: {before:?}");
    assert!(during >= Duration::from_millis(100), "during: {during:?}");
    assert!(after < Duration::from_millis(50), "after: {after:?}");
    if mechanism == "nfqueue" {
        assert!(rule.contains("NFQUEUE"), "the rule was in force: {rule}");
        let left = net::run_in(&net.host("n1").ns, "iptables", &["-S", "OUTPUT"]);
        assert!(!left.unwrap_or_default().contains("NFQUEUE"), "rule left");
        assert_eq!(pids(&net.host("n1").ns).trim(), "", "the delayer is gone");
    }
    drop(stream);
    drop(net);
    assert_eq!(net::leftovers(), Vec::<String>::new(), "namespaces left");
}

/// The delayer's processes anywhere on the machine (by their command line).
fn delayers() -> Vec<String> {
    let ps = net::run("ps", &["-eo", "pid,args"]).unwrap_or_default();
    ps.lines()
        .filter(|l| l.contains("dlock-partitions delayer"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_dead_delayer_lets_packets_pass_and_clean_removes_a_lost_one() {
    let Some((_one, net, mut stream)) = two_hosts() else {
        return;
    };
    let delayed = delayer::delay(&net, &["n1".to_string()], 100).expect("the delay");
    if delayed.mechanism() != "nfqueue" {
        eprintln!("skipped: this kernel has netem");
        return;
    }
    // The delayer killed with its rule still in force: `--queue-bypass` lets packets through.
    for pid in pids(&net.host("n1").ns).split_whitespace() {
        let _ = net::run("kill", &["-9", pid]);
    }
    std::thread::sleep(Duration::from_millis(100));
    let bypassed = rtt(&mut stream);
    assert!(
        bypassed < Duration::from_millis(50),
        "bypassed: {bypassed:?}"
    );
    drop(delayed);

    // A run killed with a delay in force (its guard never runs): the next start's clean
    // removes the delayer with the namespace.
    std::mem::forget(delayer::delay(&net, &["n1".to_string()], 100).expect("the delay"));
    assert!(!delayers().is_empty(), "the delayer runs");
    drop(stream);
    std::mem::forget(net);
    assert!(net::clean_leftovers() > 0, "clean found the namespaces");
    assert_eq!(delayers(), Vec::<String>::new(), "delayer left");
    assert_eq!(net::leftovers(), Vec::<String>::new(), "namespaces left");
}
