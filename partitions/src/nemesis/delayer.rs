//! Packet delay where the kernel has no `sch_netem` (the development machine's and CI's): an
//! iptables NFQUEUE rule in the delayed host's namespace hands each outgoing packet to
//! `dlock-partitions delayer`, which holds it the delay and then accepts it, in arrival order.
//! (nft's own `queue` statement needs CONFIG_NFT_QUEUE, which these kernels lack; the xtables
//! NFQUEUE target through iptables-nft works.) `delay` applies it, netem first where it exists;
//! the guard it returns removes everything when dropped, whatever happened.

use std::collections::VecDeque;
use std::io::BufRead;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use crate::topology::net::{run_in, Net};

/// The queue every delayed host uses: NFQUEUE instances are per network namespace.
const QUEUE: &str = "0";

/// `dlock-partitions delayer`: started by the nemesis inside a host's namespace.
#[derive(clap::Args, Debug)]
pub struct DelayerArgs {
    /// The NFQUEUE number to bind.
    #[arg(long)]
    pub queue: u16,
    /// How long each packet is held before it is accepted.
    #[arg(long)]
    pub ms: u64,
}

pub fn main(args: DelayerArgs) -> ExitCode {
    match serve(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("delayer: {e}");
            ExitCode::FAILURE
        }
    }
}

fn open(queue: u16) -> Result<nfq::Queue, String> {
    let fail = |what: &str, e: std::io::Error| format!("{what} (queue {queue}): {e}");
    let mut q = nfq::Queue::open().map_err(|e| fail("open", e))?;
    q.bind(queue).map_err(|e| fail("bind", e))?;
    // Metadata only: an unmodified verdict needs just the packet id.
    q.set_copy_range(queue, 0)
        .map_err(|e| fail("copy range", e))?;
    // A full queue lets packets pass rather than drop them: this fault delays, never loses.
    q.set_fail_open(queue, true)
        .map_err(|e| fail("fail open", e))?;
    q.set_queue_max_len(queue, 65536)
        .map_err(|e| fail("queue length", e))?;
    q.set_nonblocking(true);
    Ok(q)
}

/// Binds the queue, says "ready" on stdout (the nemesis adds its rule only then), and holds
/// each packet until it is due; on SIGTERM/SIGINT accepts what it holds and exits.
fn serve(args: &DelayerArgs) -> Result<(), String> {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    mask.add(Signal::SIGINT);
    // Blocked and read from a signalfd: the loop sees the signal without a handler.
    mask.thread_block().map_err(|e| format!("sigmask: {e}"))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    let mut q = open(args.queue)?;
    println!("ready");
    let delay = Duration::from_millis(args.ms);
    let mut held = VecDeque::new();
    let result = loop {
        if matches!(signals.read_signal(), Ok(Some(_))) {
            break Ok(());
        }
        if let Err(e) = receive(&mut q, &mut held) {
            break Err(e);
        }
        if let Err(e) = release(&mut q, &mut held, delay) {
            break Err(e);
        }
        // Packets can arrive at any time (no fd to poll in nfq): 1 ms is the delay's precision.
        let next = held
            .front()
            .map_or(delay, |(t, _)| delay.saturating_sub(t.elapsed()));
        std::thread::sleep(next.min(Duration::from_millis(1)));
    };
    // Held packets would be dropped by the kernel when the queue goes: accept them now.
    let _ = release(&mut q, &mut held, Duration::ZERO);
    let _ = q.unbind(args.queue);
    result
}

/// Takes every packet waiting in the queue, stamped with its arrival.
fn receive(q: &mut nfq::Queue, held: &mut VecDeque<(Instant, nfq::Message)>) -> Result<(), String> {
    loop {
        match q.recv() {
            Ok(msg) => held.push_back((Instant::now(), msg)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            // Interrupted by a signal: the loop checks the signalfd next.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(format!("recv: {e}")),
        }
    }
}

/// Accepts, in arrival order, the packets held at least `delay`.
fn release(
    q: &mut nfq::Queue,
    held: &mut VecDeque<(Instant, nfq::Message)>,
    delay: Duration,
) -> Result<(), String> {
    while held.front().is_some_and(|(t, _)| t.elapsed() >= delay) {
        if let Some((_, mut msg)) = held.pop_front() {
            msg.set_verdict(nfq::Verdict::Accept);
            q.verdict(msg).map_err(|e| format!("verdict: {e}"))?;
        }
    }
    Ok(())
}

/// A delay in force: the hosts with a netem qdisc, or those with a rule and a delayer.
/// Dropping it removes them.
#[derive(Default)]
pub struct Delayed {
    netem: Vec<String>,
    nfqueue: Vec<(String, Child)>,
}

impl Delayed {
    /// How the delay is done, for the report.
    pub fn mechanism(&self) -> &'static str {
        if self.nfqueue.is_empty() {
            "netem"
        } else {
            "nfqueue"
        }
    }
}

/// Delays every packet these hosts send by `ms`: netem where the kernel has it, else NFQUEUE.
pub fn delay(net: &Net, hosts: &[String], ms: u32) -> Result<Delayed, String> {
    let namespaces: Vec<String> = hosts.iter().map(|h| net.host(h).ns.clone()).collect();
    let delay = format!("{ms}ms");
    let args = [
        "qdisc", "add", "dev", "eth0", "root", "netem", "delay", &delay,
    ];
    // The guard exists before the first change, so a failure half-way removes what was done.
    let mut done = Delayed::default();
    for ns in &namespaces {
        match run_in(ns, "tc", &args) {
            Ok(_) => done.netem.push(ns.clone()),
            // No netem on the first host: the kernel has none.
            Err(why) if done.netem.is_empty() => return nfqueue(done, &namespaces, ms, &why),
            Err(why) => return Err(why),
        }
    }
    Ok(done)
}

/// The delayer and the rule feeding it, in each namespace.
fn nfqueue(
    mut done: Delayed,
    namespaces: &[String],
    ms: u32,
    netem: &str,
) -> Result<Delayed, String> {
    for ns in namespaces {
        let child = start_delayer(ns, ms).map_err(|e| format!("{e} (netem: {netem})"))?;
        done.nfqueue.push((ns.clone(), child));
    }
    for ns in namespaces {
        run_in(ns, "iptables", &rule("-I")).map_err(|e| format!("{e} (netem: {netem})"))?;
    }
    Ok(done)
}

/// The rule sending a host's outgoing IPv4 packets on its link (not loopback) to the queue;
/// `--queue-bypass`: with no delayer bound they pass instead of being dropped.
fn rule(op: &str) -> [&str; 9] {
    let queue = QUEUE;
    [
        op,
        "OUTPUT",
        "-o",
        "eth0",
        "-j",
        "NFQUEUE",
        "--queue-num",
        queue,
        "--queue-bypass",
    ]
}

/// The binary to start the delayer from: this one, or (for tests, whose own binary has no such
/// subcommand) the one `DLOCK_PARTITIONS_EXE` names.
fn program() -> Result<std::path::PathBuf, String> {
    match std::env::var_os("DLOCK_PARTITIONS_EXE") {
        Some(p) => Ok(p.into()),
        None => std::env::current_exe().map_err(|e| format!("current exe: {e}")),
    }
}

/// Starts the delayer in `ns` and waits for it to have bound its queue.
fn start_delayer(ns: &str, ms: u32) -> Result<Child, String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(program()?)
        .args(["delayer", "--queue", QUEUE, "--ms", &ms.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("delayer in {ns}: {e}"))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        // EOF (the delayer failed, its error on our stderr) leaves the line empty.
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    if line.trim() == "ready" {
        return Ok(child);
    }
    stop(&mut child);
    Err(format!("the delayer in {ns} did not start"))
}

/// SIGTERM (it accepts what it holds), then SIGKILL if it has not exited within 2 s.
fn stop(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Delayed {
    fn drop(&mut self) {
        for ns in &self.netem {
            let _ = run_in(ns, "tc", &["qdisc", "del", "dev", "eth0", "root"]);
        }
        for (ns, child) in &mut self.nfqueue {
            // The rule first, so nothing new is queued; then the delayer lets its packets go.
            // Absent where the rule was never added.
            let _ = run_in(ns, "iptables", &rule("-D"));
            stop(child);
        }
    }
}
