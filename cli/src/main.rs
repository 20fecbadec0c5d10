//! `dlock`: take a lock across N Redis masters running the dlock module, from the shell.

mod connection;
mod descendants;
mod durations;
mod elect;
pub mod exit;
mod progress;
mod run;
mod screen;
mod status;
mod supervise;
mod top;
mod usage;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use dlock_client::{
    Error, LockKind, LockManager, LockSet, ReplicaAck, Resource, WaitMode, MAX_LIMIT,
};

#[derive(Parser)]
#[command(name = "dlock", version, about = "Distributed locks with fencing tokens across Redis masters running the dlock module", after_help = exit::AFTER_HELP)]
struct Cli {
    /// Comma-separated node URLs: redis://host:port (rediss:// over TLS, unix:///path for a
    /// socket) for a master, redis+cluster://host:port (rediss+cluster://) for a Redis Cluster
    /// (any node of it), which then counts as one node of the quorum.
    #[arg(
        long,
        env = "DLOCK_NODES",
        default_value = "redis://127.0.0.1:6379",
        global = true
    )]
    nodes: String,
    /// Per-node timeout for each call (connecting included); more than 0.
    #[arg(long, env = "DLOCK_TIMEOUT", default_value = "50ms", value_name = "DURATION", value_parser = durations::positive, global = true)]
    timeout: Duration,
    /// Disable quorum fencing (one round trip less; tokens then come from a single node).
    /// With several nodes this also means --wait-mode retry.
    #[arg(long, global = true)]
    no_fencing: bool,
    /// How --wait waits: `queue` on the nodes in arrival order (no polling), or `retry` every
    /// 25-50 ms (for nodes whose module predates server-side waits).
    #[arg(
        long,
        env = "DLOCK_WAIT_MODE",
        value_enum,
        default_value = "queue",
        global = true
    )]
    wait_mode: WaitModeArg,
    /// Replicas that must acknowledge each grant, extension and commit (WAIT) before it counts:
    /// `auto` (1 on redis+cluster:// nodes, none on masters), `off`, or a number for every node.
    #[arg(long, env = "DLOCK_REPLICA_ACK", default_value = "auto", value_parser = parse_replica_ack, global = true)]
    replica_ack: AckCount,
    /// How long a write waits for its replicas before the node counts as not having granted.
    #[arg(long, env = "DLOCK_ACK_TIMEOUT", default_value = "100ms", value_name = "DURATION", value_parser = durations::positive, global = true)]
    ack_timeout: Duration,
    #[command(flatten)]
    connection: connection::ConnectionArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum WaitModeArg {
    Queue,
    Retry,
}

impl From<WaitModeArg> for WaitMode {
    fn from(mode: WaitModeArg) -> WaitMode {
        match mode {
            WaitModeArg::Queue => WaitMode::Queue,
            WaitModeArg::Retry => WaitMode::Retry,
        }
    }
}

#[derive(Clone, Copy)]
enum AckCount {
    Auto,
    Replicas(u32),
}

fn parse_replica_ack(text: &str) -> Result<AckCount, String> {
    match text {
        "auto" => Ok(AckCount::Auto),
        "off" => Ok(AckCount::Replicas(0)),
        n => n
            .parse()
            .map(AckCount::Replicas)
            .map_err(|_| format!("expected auto, off or a replica count, got {n:?}")),
    }
}

impl Cli {
    fn replica_ack(&self) -> ReplicaAck {
        match self.replica_ack {
            AckCount::Auto => ReplicaAck::Auto {
                timeout: self.ack_timeout,
            },
            AckCount::Replicas(0) => ReplicaAck::Off,
            AckCount::Replicas(count) => ReplicaAck::Replicas {
                count,
                timeout: self.ack_timeout,
            },
        }
    }
}

/// How to hold the resource: exclusively (the default), shared, or as one of N permits.
#[derive(Args, Clone, Copy)]
struct KindArgs {
    /// Take a shared (reader's) hold: any number of shared holders at once, none while
    /// someone holds it exclusively.
    #[arg(long, conflicts_with = "limit")]
    shared: bool,
    /// Take one of N permits of a semaphore: at most N holders at once (`sem` for a fleet).
    /// Needs more than nodes·N/(N+1) nodes to grant.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIMIT)))]
    limit: Option<u32>,
}

impl KindArgs {
    /// One resource held as asked, or several as one set (each shared with `--shared`; a set
    /// of semaphores is refused: a set's members are locks).
    fn target(self, names: &[String]) -> Result<run::Target<'_>, Error> {
        match names {
            [name] => Ok(run::Target::One(self.of(name))),
            _ if self.limit.is_some() => Err(Error::InvalidArgument(
                "--limit takes one resource: a set's members are locks".into(),
            )),
            _ => {
                let mut set = LockSet::new(names.iter().cloned())?;
                if self.shared {
                    for name in names {
                        set = set.shared(name)?;
                    }
                }
                Ok(run::Target::Set(set))
            }
        }
    }

    fn of(self, name: &str) -> Resource<'_> {
        let kind = match (self.shared, self.limit) {
            (_, Some(limit)) => LockKind::Semaphore { limit },
            (true, None) => LockKind::Shared,
            (false, None) => LockKind::Exclusive,
        };
        Resource { name, kind }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run CMD while holding RESOURCE (extended while it runs, released when it exits);
    /// several resources are taken all or nothing, as one set (docs/multi.md). CMD sees
    /// DLOCK_TOKEN, DLOCK_TOKENS (one per resource, in order), DLOCK_OWNER and DLOCK_RESOURCE.
    Run {
        #[arg(required = true, num_args = 1..)]
        resources: Vec<String>,
        /// Lease on the nodes (1ms to 24h), extended every ttl/3 while CMD runs.
        #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = durations::ttl)]
        ttl: Duration,
        /// Longest wait for the lock (queued on the nodes); 0s: one attempt.
        #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = durations::any)]
        wait: Duration,
        /// Stop the command after this long (SIGTERM, then SIGKILL 10 s later) and exit 5, so a
        /// stuck command cannot keep the lock forever; the lock is kept until the command is
        /// gone. Default: no cap.
        #[arg(long, value_name = "DURATION", value_parser = durations::positive)]
        max_hold: Option<Duration>,
        #[command(flatten)]
        kind: KindArgs,
        /// No waiting line on stderr (it shows only on a terminal anyway).
        #[arg(long, short)]
        quiet: bool,
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
    /// Acquire and keep RESOURCE; prints `OWNER TOKEN VALIDITY_MS`.
    Acquire {
        resource: String,
        /// Lease on the nodes (1ms to 24h); the lock stays held after dlock exits.
        #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = durations::ttl)]
        ttl: Duration,
        /// Longest wait for the lock (queued on the nodes); 0s: one attempt.
        #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = durations::any)]
        wait: Duration,
        #[command(flatten)]
        kind: KindArgs,
        /// No waiting line on stderr (it shows only on a terminal anyway).
        #[arg(long, short)]
        quiet: bool,
    },
    /// Release OWNER's lock on RESOURCE on every node.
    Release { resource: String, owner: String },
    /// Reset the TTL of OWNER's lock on RESOURCE; prints the new VALIDITY_MS. A semaphore's
    /// permit needs its --limit (its quorum is larger than a majority).
    Extend {
        resource: String,
        owner: String,
        /// The new lease (1ms to 24h), from now.
        #[arg(long, value_name = "DURATION", value_parser = durations::ttl)]
        ttl: Duration,
        #[command(flatten)]
        kind: KindArgs,
    },
    /// Show each node's view of RESOURCE.
    Status { resource: String },
    /// Show the hot locks of every node: resources with waiters (longest queue first) and held
    /// locks with holder, token and lease left. Live on a terminal (q or Ctrl-C quits).
    /// Needs DLOCK.TOP (ACL @dangerous); redis+cluster:// nodes: list each master instead.
    Top(top::Options),
    /// Run CMD only while this process leads NAME (docs/election.md): campaign (queued on the
    /// nodes), run CMD with DLOCK_EPOCH, DLOCK_VALUE and DLOCK_ELECTION in its environment,
    /// stop it when leadership is lost and campaign again (unless --once); resign when it exits.
    Elect {
        name: String,
        /// What observers read as the leader's value (an address, an id; at most 200 bytes).
        #[arg(long, default_value = "")]
        value: String,
        /// Leadership's lease on the nodes (1ms to 24h), extended every ttl/3.
        #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = durations::ttl)]
        ttl: Duration,
        /// Exit 5 when leadership is lost instead of campaigning again.
        #[arg(long)]
        once: bool,
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
    /// Print who leads NAME: `EPOCH ID VALUE`; exit 6 when nobody does.
    Leader { name: String },
    /// Print each change of NAME's leader as it happens (`EPOCH ID VALUE`, or `none`), until
    /// Ctrl-C or --count changes.
    Observe {
        name: String,
        /// One JSON object per line: {"leader":{"epoch":"..","id":"..","value":".."}} or
        /// {"leader":null}.
        #[arg(long)]
        json: bool,
        /// Exit after this many lines (the first is who leads now).
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // A guard of `dlock run`'s command takes no arguments and asks no node.
    if supervise::is_guard() {
        return ExitCode::from(supervise::guard());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage::refuse(&e),
    };
    let builder = LockManager::builder(node_urls(&cli.nodes))
        .login_hint("--user and DLOCK_PASSWORD, or --password-file")
        .timeout(cli.timeout)
        .fencing(!cli.no_fencing)
        .wait_mode(cli.wait_mode.into())
        .replica_ack(cli.replica_ack());
    let manager = match cli.connection.apply(builder).and_then(|b| b.build()) {
        Ok(manager) => manager,
        Err(e) => return fail(&e),
    };
    let code = dispatch(&manager, cli.command).await;
    // Releases left in the background (a failed or withdrawn round) go out before exiting.
    manager.settle(SETTLE).await;
    ExitCode::from(code)
}

/// The node URLs of a comma-separated list. A comma also separates the sentinels inside one
/// `redis+sentinel://h1:p1,h2:p2/name` URL: a piece without a `scheme://` continues the URL
/// before it.
fn node_urls(list: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for piece in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match urls.last_mut() {
            Some(last) if !piece.contains("://") => {
                last.push(',');
                last.push_str(piece);
            }
            _ => urls.push(piece.to_string()),
        }
    }
    urls
}

/// The most dlock waits at exit for its background releases.
const SETTLE: Duration = Duration::from_secs(2);

async fn dispatch(manager: &LockManager, command: Command) -> u8 {
    match command {
        Command::Run {
            resources,
            ttl,
            wait,
            max_hold,
            kind,
            quiet,
            cmd,
        } => {
            let target = match kind.target(&resources) {
                Ok(target) => target,
                Err(e) => {
                    eprintln!("dlock: {e}");
                    return exit::USAGE;
                }
            };
            run::run(manager, target, (ttl, wait, max_hold), quiet, &cmd).await
        }
        Command::Acquire {
            resource,
            ttl,
            wait,
            kind,
            quiet,
        } => acquire(manager, kind.of(&resource), (ttl, wait), quiet).await,
        Command::Release { resource, owner } => release(manager, &resource, &owner).await,
        Command::Extend {
            resource,
            owner,
            ttl,
            kind,
        } => extend(manager, kind.of(&resource), &owner, ttl).await,
        Command::Status { resource } => status::status(manager, &resource).await,
        Command::Top(opts) => top::top(manager, &opts).await,
        Command::Elect {
            name,
            value,
            ttl,
            once,
            cmd,
        } => elect::elect(manager, &name, &value, elect::Terms { ttl, once }, &cmd).await,
        Command::Leader { name } => elect::leader(manager, &name).await,
        Command::Observe { name, json, count } => elect::observe(manager, &name, json, count).await,
    }
}

/// `dlock acquire`: the lock taken and left held, its owner, token and validity printed for a
/// later `release` or `extend`.
async fn acquire(
    manager: &LockManager,
    resource: Resource<'_>,
    times: (Duration, Duration),
    quiet: bool,
) -> u8 {
    match progress::lock(manager, resource, times, quiet).await {
        Ok(guard) => match guard.detach().await {
            Ok((owner, token, validity)) => {
                println!("{owner} {token} {}", validity.as_millis());
                0
            }
            Err(e) => code_of(&e),
        },
        Err(e) => code_of(&e),
    }
}

/// `dlock release`: by the owner `acquire` printed.
async fn release(manager: &LockManager, resource: &str, owner: &str) -> u8 {
    match manager.release_owner(resource, owner).await {
        Ok(0) => not_held(resource, owner),
        Ok(_) => 0,
        Err(e) => code_of(&e),
    }
}

/// `dlock extend`: by the owner `acquire` printed; the new validity printed.
async fn extend(manager: &LockManager, resource: Resource<'_>, owner: &str, ttl: Duration) -> u8 {
    let name = resource.name;
    match manager.extend_owner(resource, owner, ttl).await {
        Ok(validity) => {
            println!("{}", validity.as_millis());
            0
        }
        Err(Error::LockLost { .. }) => not_held(name, owner),
        Err(e) => code_of(&e),
    }
}

/// `n` and its noun, singular or plural: `1 node`, `3 nodes`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn not_held(resource: &str, owner: &str) -> u8 {
    eprintln!("dlock: {owner} does not hold {resource:?} on a majority");
    exit::NOT_HELD
}

/// Prints the one-line reason and returns the documented exit code.
pub fn code_of(e: &Error) -> u8 {
    eprintln!("dlock: {e}");
    match e {
        Error::Contended { .. } => exit::CONTENDED,
        Error::NoQuorum { .. } | Error::ValidityExpired { .. } => exit::NO_QUORUM,
        Error::LockLost { .. } | Error::Stale { .. } => exit::LOST,
        Error::Guarded { .. } => exit::NO_QUORUM,
        Error::InvalidArgument(_) => exit::USAGE,
        Error::WrongKind { .. } => exit::WRONG_KIND,
    }
}

fn fail(e: &Error) -> ExitCode {
    ExitCode::from(code_of(e))
}

#[cfg(test)]
mod tests {
    use super::node_urls;

    #[test]
    fn node_lists_split_on_commas_except_inside_a_sentinel_url() {
        assert_eq!(
            node_urls("redis://a:1, redis+sentinel://s1:26379,s2:26379/m,rediss://b:2"),
            [
                "redis://a:1",
                "redis+sentinel://s1:26379,s2:26379/m",
                "rediss://b:2"
            ]
        );
        assert_eq!(node_urls("redis://a:1,,"), ["redis://a:1"]);
    }
}
