//! A client process through the CLI (`dlock-partitions cli-worker`): each critical section is
//! `dlock run dlp:lock -- dlock-partitions cli-section ...`, the real binary, so what is tested
//! is what a shell script gets. Two halves write one history (JSON lines on the same stdout,
//! which `dlock run` hands to its command; each line is one write, below PIPE_BUF, so lines
//! never interleave):
//!
//! - the recorder (this process) records `acquire` invoked just before it starts `dlock run`,
//!   and what it learns when `dlock run` returns: the lock was never granted (`acquire` fail,
//!   dlock's own message as the error), or the release's outcome;
//! - the section (the command, started by `dlock run` only once the lock is granted) records
//!   `acquire` ok at its start, with `$DLOCK_TOKEN`, then the guarded read, hold and guarded
//!   write (`DLOCK.GUARD` with that token), then `release` invoked as it exits.
//!
//! What the CLI does not tell, and so is not recorded: the grant's exact time (the section's
//! start is a few milliseconds later: dlock spawning its guard and the command), the lease's
//! validity (the command only gets the token; `dlock run` renews every TTL/3 and stops the
//! command when the lock is lost, so the holder's belief is taken as TTL/3 from the section's
//! start, or its end if sooner), when dlock's extensions happened, and the release's own start
//! (the section's exit stands for it: dlock releases right after). A `dlock run` that never
//! returns leaves its `acquire` open (the checker's lost waiter) and the process hung; no
//! `info` is printed for it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::history::{emit, mono_ns, Event, Kind, F};
use crate::names::{holding_mark, GATE, REGISTER, RESOURCE};
use crate::workloads::args::WorkerArgs;

/// The command `dlock run` starts once the lock is held (one critical section).
#[derive(clap::Args, Clone, Debug)]
pub struct SectionArgs {
    #[arg(long)]
    pub id: u32,
    #[arg(long)]
    pub register: String,
    #[arg(long)]
    pub ttl_ms: u64,
    #[arg(long)]
    pub hold_ms: u64,
    /// The value this section writes.
    #[arg(long)]
    pub new: u64,
    #[arg(long)]
    pub bypass_gate: bool,
    #[arg(long)]
    pub state_dir: PathBuf,
}

/// Marks the section leaves for the recorder: `granted` (it started, the lock was granted) and
/// `ended` (it recorded the release's invocation, then exited by itself).
fn mark(state: &Path, what: &str, id: u32) -> PathBuf {
    state.join(format!("cli-{what}-{id}"))
}

/// The recorder: `dlock run` over and over until the schedule ends.
pub fn main(args: WorkerArgs) -> ExitCode {
    if let Some(url) = args.nodes.iter().find(|u| u.contains(',')) {
        // `--nodes` of the CLI is comma-separated: a sentinel URL would not survive it.
        eprintln!("cli worker {}: plain node URLs only, got {url}", args.id);
        return ExitCode::FAILURE;
    }
    let dlock = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name("dlock"),
        Err(e) => {
            eprintln!("cli worker {}: current exe: {e}", args.id);
            return ExitCode::FAILURE;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let mut seq = 0u64;
    while Instant::now() < deadline {
        let new = u64::from(args.id) * 1_000_000 + seq + 1;
        match section(&args, &dlock, new) {
            Ok(true) => seq += 1,
            Ok(false) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                eprintln!("cli worker {}: {e}", args.id);
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn dlock_run(args: &WorkerArgs, dlock: &Path, new: u64) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let ttl = args.ttl_ms;
    let mut cmd = Command::new(dlock);
    cmd.args(["--nodes", &args.nodes.join(","), "--timeout", "100ms"]);
    match args.replicas {
        0 => cmd.args(["--replica-ack", "off"]),
        n => cmd.args(["--replica-ack", &n.to_string(), "--ack-timeout", "200ms"]),
    };
    cmd.args(["run", RESOURCE, "--ttl", &format!("{ttl}ms")]);
    cmd.args(["--wait", &format!("{}ms", ttl * 2), "--"]);
    cmd.arg(exe).arg("cli-section");
    cmd.args(["--id", &args.id.to_string(), "--register", &args.register]);
    cmd.args([
        "--ttl-ms",
        &ttl.to_string(),
        "--hold-ms",
        &args.hold_ms.to_string(),
    ]);
    cmd.args(["--new", &new.to_string()])
        .arg("--state-dir")
        .arg(&args.state_dir);
    if args.bypass_gate {
        cmd.arg("--bypass-gate");
    }
    Ok(cmd)
}

/// One `dlock run`; true if the lock was granted (the section started).
fn section(args: &WorkerArgs, dlock: &Path, new: u64) -> Result<bool, String> {
    let (granted, ended) = (
        mark(&args.state_dir, "granted", args.id),
        mark(&args.state_dir, "ended", args.id),
    );
    let _ = std::fs::remove_file(&granted);
    let _ = std::fs::remove_file(&ended);
    let mut cmd = dlock_run(args, dlock, new)?;
    // stdout inherited: the section prints its events into the suite's pipe directly.
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    emit(&Event::new(args.id, Kind::Invoke, F::Acquire));
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{}: {e}", dlock.display()))?;
    let mut said = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut said);
    }
    let code = child.wait().map_err(|e| format!("dlock run: {e}"))?.code();
    // dlock's own refusals (`dlock: ...`) go into the history; anything else is shown.
    said.lines()
        .filter(|l| !l.starts_with("dlock:"))
        .for_each(|l| eprintln!("cli worker {}: {l}", args.id));
    let last = said.lines().last().unwrap_or("").to_string();
    if !granted.exists() {
        let mut e = Event::new(args.id, Kind::Fail, F::Acquire);
        e.error = Some(format!("dlock run exit {code:?}: {last}"));
        emit(&e);
        return Ok(false);
    }
    if !ended.exists() {
        // Stopped before it ended (the lock found lost: exit 5, or killed): the release's
        // invocation is not recorded yet.
        emit(&Event::new(args.id, Kind::Invoke, F::Release));
    }
    let release_failed = said.lines().find(|l| l.starts_with("dlock: release:"));
    // Exit 5 after the section ended: dlock found the lock lost as the command exited.
    let (kind, error) = match (code, release_failed) {
        (Some(0), None) => (Kind::Ok, None),
        (_, Some(l)) => (Kind::Fail, Some(l.to_string())),
        _ => (Kind::Fail, Some(format!("dlock run exit {code:?}: {last}"))),
    };
    let mut e = Event::new(args.id, kind, F::Release);
    e.error = error;
    emit(&e);
    Ok(true)
}

/// The section: `dlock run`'s command, with the lock held and its token in `$DLOCK_TOKEN`.
pub fn section_main(args: SectionArgs) -> ExitCode {
    let token = std::env::var("DLOCK_TOKEN")
        .ok()
        .and_then(|t| t.parse::<u64>().ok());
    let mut granted = Event::new(args.id, Kind::Ok, F::Acquire);
    granted.token = token;
    // The CLI tells the command no validity; dlock run renews every TTL/3 (see the module doc).
    granted.validity_ms = Some(args.ttl_ms / 3);
    emit(&granted);
    // After the event: killed in between, the recorder's `acquire` fail finds no open
    // invocation and is ignored, where the other order would leave the grant open forever.
    let _ = std::fs::write(mark(&args.state_dir, "granted", args.id), b"");
    let Some(token) = token else {
        eprintln!("cli section {}: no DLOCK_TOKEN in the environment", args.id);
        return ExitCode::FAILURE;
    };
    cas(&args, token);
    // The mark first: killed in between, the recorder's release completion finds no open
    // invocation and is ignored, where the other order would leave one open (unknown) forever.
    let _ = std::fs::write(mark(&args.state_dir, "ended", args.id), b"");
    emit(&Event::new(args.id, Kind::Invoke, F::Release));
    ExitCode::SUCCESS
}

fn register(url: &str) -> Result<redis::Connection, redis::RedisError> {
    let client = redis::Client::open(url)?;
    let con = client.get_connection_with_timeout(Duration::from_secs(1))?;
    con.set_read_timeout(Some(Duration::from_secs(1)))?;
    con.set_write_timeout(Some(Duration::from_secs(1)))?;
    Ok(con)
}

/// A command on the register, through the gate with `token` unless the gate is bypassed.
fn send<T: redis::FromRedisValue>(
    args: &SectionArgs,
    con: &mut redis::Connection,
    token: u64,
    name: &str,
    rest: &[&str],
) -> Result<T, redis::RedisError> {
    let mut cmd = if args.bypass_gate {
        redis::cmd(name)
    } else {
        let mut c = redis::cmd("DLOCK.GUARD");
        c.arg(GATE).arg(token).arg(name);
        c
    };
    cmd.arg(rest);
    cmd.query(con)
}

fn stale(e: &redis::RedisError) -> bool {
    e.code() == Some("STALE") || e.to_string().contains("STALE")
}

/// The critical section, as the Rust worker's (workloads/section.rs): read, hold, write `new`.
fn cas(args: &SectionArgs, token: u64) {
    let event = |kind: Kind, read: Option<u64>, error: Option<String>, write_ns: Option<u64>| {
        let mut e = Event::new(args.id, kind, F::Cas);
        (e.token, e.new, e.gated) = (Some(token), Some(args.new), Some(!args.bypass_gate));
        (e.read, e.error, e.write_ns) = (read, error, write_ns);
        emit(&e);
    };
    event(Kind::Invoke, None, None, None);
    let read = register(&args.register).and_then(|mut con| {
        send::<Option<u64>>(args, &mut con, token, "GET", &[REGISTER]).map(|v| (con, v))
    });
    let (mut con, read) = match read {
        Ok((con, v)) => (con, v.unwrap_or(0)),
        // Nothing was written yet: whatever the read's fate, the operation did not happen.
        Err(e) => return event(Kind::Fail, None, Some(e.to_string()), None),
    };
    let holding = holding_mark(&args.state_dir, args.id);
    // Best effort: a missing mark only means the nemesis picks another moment.
    let _ = std::fs::write(&holding, b"");
    std::thread::sleep(Duration::from_millis(args.hold_ms));
    let _ = std::fs::remove_file(&holding);
    let write_ns = Some(mono_ns());
    let new = args.new.to_string();
    match send::<()>(args, &mut con, token, "SET", &[REGISTER, &new]) {
        Ok(()) => event(Kind::Ok, Some(read), None, write_ns),
        Err(e) if stale(&e) => event(Kind::Fail, Some(read), Some(e.to_string()), write_ns),
        // A timeout or a broken connection: the write may have been applied.
        Err(e) => event(Kind::Info, Some(read), Some(e.to_string()), write_ns),
    }
}
