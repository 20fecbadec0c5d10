//! The test's own hosts and network. Every host (a Redis node, a client process, the register,
//! the control host) is a network namespace named `dlp-<host>`, wired by a veth pair to one
//! bridge that lives in a namespace of its own (`dlp-sw`). Veth pairs are created inside the
//! switch namespace with their peer moved straight into the host namespace, and the addresses
//! (10.231.0.0/24) and nftables tables exist only inside the namespaces: nothing is ever added
//! to the machine's own namespace, so deleting the `dlp-` namespaces removes every link, bridge,
//! address and rule this suite made.

use std::os::fd::AsFd;
use std::process::{Command, Stdio};

/// Every namespace this suite creates starts with it; a start removes any left by a crash.
pub const PREFIX: &str = "dlp-";
const SWITCH: &str = "dlp-sw";
const SUBNET: &str = "10.231.0";

/// One host: its short name (`n1`, `c2`, `reg`, `ctl`), namespace and address.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub ns: String,
    pub addr: String,
}

/// The namespaces of a run; removed (processes killed first) on drop, whatever happened.
pub struct Net {
    pub hosts: Vec<Host>,
}

/// Runs a program and returns its stdout, or an error naming the command and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs a program inside a host's namespace.
pub fn run_in(ns: &str, program: &str, args: &[&str]) -> Result<String, String> {
    let mut argv = vec!["netns", "exec", ns, program];
    argv.extend_from_slice(args);
    run("ip", &argv)
}

/// The nftables table each host starts with: empty input and output chains the faults fill
/// (nemesis/apply.rs); an empty chain with policy accept changes nothing.
const TABLE: &str = "table inet dlp {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}";

impl Net {
    /// The switch and one namespace per host, addresses .10, .11, ... in host order.
    pub fn create(names: &[&str]) -> Result<Net, String> {
        clean_leftovers();
        // The guard exists before the first namespace, so a failure half-way removes them.
        let mut net = Net { hosts: Vec::new() };
        run("ip", &["netns", "add", SWITCH])?;
        run(
            "ip",
            &["-n", SWITCH, "link", "add", "br0", "type", "bridge"],
        )?;
        run("ip", &["-n", SWITCH, "link", "set", "br0", "up"])?;
        for (i, name) in names.iter().enumerate() {
            let host = Host {
                name: name.to_string(),
                ns: format!("{PREFIX}{name}"),
                addr: format!("{SUBNET}.{}", 10 + i),
            };
            add_host(&host)?;
            net.hosts.push(host);
        }
        Ok(net)
    }

    /// The host of that short name.
    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} in this run's network"))
    }
}

fn add_host(host: &Host) -> Result<(), String> {
    let (ns, veth) = (host.ns.as_str(), format!("v-{}", host.name));
    run("ip", &["netns", "add", ns])?;
    run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    run(
        "ip",
        &[
            "-n", SWITCH, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ],
    )?;
    run("ip", &["-n", SWITCH, "link", "set", &veth, "master", "br0"])?;
    run("ip", &["-n", SWITCH, "link", "set", &veth, "up"])?;
    let cidr = format!("{}/24", host.addr);
    run("ip", &["-n", ns, "addr", "add", &cidr, "dev", "eth0"])?;
    run("ip", &["-n", ns, "link", "set", "eth0", "up"])?;
    nft(ns, TABLE)
}

/// Loads an nftables script inside a namespace.
pub fn nft(ns: &str, script: &str) -> Result<(), String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("nft: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft in {ns}: {}\n{script}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for host in &self.hosts {
            remove(&host.ns);
        }
        remove(SWITCH);
    }
}

/// Our namespaces that exist now (a leftover check after a run must find none).
pub fn leftovers() -> Vec<String> {
    let listed = run("ip", &["netns", "list"]).unwrap_or_default();
    listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect()
}

/// The temp dirs a run makes (nodes' data, AOF and cluster `nodes.conf`, sentinels' configs,
/// the workers' marks); removed by their owners' Drop, so only a killed run leaves them.
const TEMP_DIRS: [&str; 3] = ["dlp-redis-", "dlp-sentinel-", "dlp-state-"];

/// Our temp dirs that exist now (a leftover check after a run must find none).
pub fn leftover_dirs() -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            TEMP_DIRS.iter().any(|p| name.starts_with(p))
        })
        .map(|e| e.path())
        .collect()
}

/// Removes every `dlp-` namespace and the processes inside, and our temp dirs (what a crashed
/// run left); returns how many namespaces it removed.
pub fn clean_leftovers() -> usize {
    let found = leftovers();
    for ns in &found {
        remove(ns);
    }
    for dir in leftover_dirs() {
        // Best effort: a dir that cannot be removed is reported by the leftover check.
        let _ = std::fs::remove_dir_all(dir);
    }
    found.len()
}

/// Kills the processes still in a namespace, then deletes it (its links, addresses and nftables
/// rules go with it). Best effort: it runs from Drop.
fn remove(ns: &str) {
    let pids = run("ip", &["netns", "pids", ns]).unwrap_or_default();
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        let pid = nix::unistd::Pid::from_raw(pid);
        // A stopped process must get SIGKILL too; SIGCONT is not needed for SIGKILL.
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = run("ip", &["netns", "del", ns]);
}

/// Runs `f` on a thread that entered `ns`'s network namespace: sockets it opens belong to that
/// namespace (a namespace is per thread), and stay usable from any thread afterwards.
pub fn inside<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("setns {path}: {e}"))?;
        Ok(f())
    })
    .join()
    .map_err(|_| "a thread inside a namespace panicked".to_string())?
}
