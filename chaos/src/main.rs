//! `make chaos` / `make chaos-quick`: five real nodes, K workers taking one lock through
//! dlock-client, a resource server behind a gate (DLOCK.GUARD), and one fault per scenario; scenario 11 runs
//! semaphore holders as processes of this binary (`dlock-chaos holder`, hidden). Exits non-zero
//! if a pass criterion fails (docs/safety/chaos.md).

mod checker;
mod cluster;
mod holder;
mod permits;
mod proxy;
mod resource;
mod scenario;
mod semaphore;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use dlock_client::{LockManager, ReplicaAck};

use checker::{Figures, Permits};
use resource::{Resource, Section};
use scenario::{Fault, Fixture, Scenario, NODES};

const WORKERS: usize = 4;

#[derive(Parser)]
#[command(about = "dlock fault-injection safety suite")]
struct Args {
    /// Short run for CI (about 10 s per scenario instead of 60 s).
    #[arg(long)]
    quick: bool,
    /// Run only these scenario numbers (1-11).
    #[arg(long, value_delimiter = ',')]
    only: Vec<u8>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// One of scenario 11's holder processes (started by the suite itself).
    #[command(hide = true)]
    Holder(holder::HolderArgs),
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Some(Command::Holder(holder)) = args.command {
        return holder::main(holder);
    }
    let duration = Duration::from_secs(if args.quick { 8 } else { 60 });
    let shim_dir = tempfile::tempdir().expect("temp dir");
    let shim = build_clock_shim(&shim_dir.path().join("clockshift.so"));
    let mut results = Vec::new();
    let scenarios = scenario::all();
    let count = scenarios.len();
    for sc in scenarios {
        if !args.only.is_empty() && !args.only.contains(&sc.number) {
            continue;
        }
        let started = Instant::now();
        let figures = match sc.fault {
            Fault::ClusterFailover { ack } => cluster::run(&sc, duration, ack),
            Fault::StopHolders { limit } => semaphore::run(&sc, duration, limit),
            _ => run(&sc, duration, shim.clone()),
        };
        let verdict = judge(&sc, &figures);
        let counted = match &figures.permits {
            Some(p) => format!("{} grants, {}", figures.grants, permits_line(p)),
            None => format!(
                "{} grants, {} overlaps, {} refused by the gate, {} stale through it, {} stale without it, {} order violations",
                figures.grants, figures.overlaps, figures.rejections, figures.accepted_stale,
                figures.unguarded_stale, figures.order_violations,
            ),
        };
        eprintln!(
            "[{}/{count}] {}: {counted} ({:.0?}) -> {}",
            sc.number,
            sc.name,
            started.elapsed(),
            shown(&verdict),
        );
        results.push((sc, figures, verdict));
    }
    report(&results)
}

/// Compiles the wall-clock shim for scenario 7 (see shim/clockshift.c for why not libfaketime).
fn build_clock_shim(out: &std::path::Path) -> Option<PathBuf> {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/shim/clockshift.c");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(out)
        .arg(source)
        .status();
    match built {
        Ok(status) if status.success() => Some(out.to_path_buf()),
        _ => {
            eprintln!("chaos: cannot compile {source}; scenario 7 will fail");
            None
        }
    }
}

/// `Ok` with what passed, or `Err` with the failed criterion.
fn judge(sc: &Scenario, f: &Figures) -> Result<&'static str, String> {
    if f.grants == 0 {
        return Err("FAILED: no grants (the scenario made no progress)".into());
    }
    if let Some(p) = &f.permits {
        return judge_permits(p);
    }
    if f.accepted_stale > 0 {
        return Err("FAILED: stale writes accepted".into());
    }
    if f.resource_errors > 0 {
        return Err("FAILED: the resource answered errors other than STALE".into());
    }
    if f.order_violations > 0 && sc.hazard {
        return Ok("pass (the hazard, shown)");
    }
    if f.order_violations > 0 {
        return Err("FAILED: token-order violations".into());
    }
    if f.overlaps > 0 && !sc.overlaps_allowed {
        return Err("FAILED: overlapping critical sections".into());
    }
    Ok("pass")
}

/// Scenario 11: never more holders than permits, and every grant its own token.
fn judge_permits(p: &Permits) -> Result<&'static str, String> {
    if p.max_holders > p.limit {
        return Err(format!(
            "FAILED: {} holders at once on a semaphore of {}",
            p.max_holders, p.limit
        ));
    }
    if p.duplicate_tokens > 0 {
        return Err("FAILED: a token granted twice".into());
    }
    Ok("pass")
}

/// Scenario 11's figures in words (its own line under the table, and its stderr line).
fn permits_line(p: &Permits) -> String {
    format!(
        "max {} holders at once (limit {}), {} holds cut short by their lease ({} SIGSTOPs), {} duplicate tokens",
        p.max_holders, p.limit, p.cut_short, p.stops, p.duplicate_tokens
    )
}

fn run(sc: &Scenario, duration: Duration, shim: Option<PathBuf>) -> Figures {
    let offset_dir = tempfile::tempdir().expect("temp dir");
    let offset_file = offset_dir.path().join("clock-offset-ms");
    std::fs::write(&offset_file, "0").expect("offset file");
    let shim_for_node = shim.map(|library| (library, offset_file.clone()));
    let servers: Vec<_> = (0..NODES)
        .map(|i| scenario::node_builder(sc.fault, sc.ttl, i, &shim_for_node).start())
        .collect();
    let mut urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    let runtime = runtime();
    let link = Arc::new(proxy::Link::default());
    if sc.fault == Fault::SlowLink {
        let port = runtime
            .block_on(proxy::start(servers[0].port(), link.clone()))
            .expect("start proxy");
        urls[0] = format!("redis://127.0.0.1:{port}/");
    }
    let fixture = Arc::new(Fixture {
        servers: Mutex::new(servers),
        link,
        clock_offset: (sc.fault == Fault::ClockJump).then_some(offset_file),
    });
    let resource = Arc::new(Resource::start());
    let deadline = Instant::now() + duration;
    let faults = {
        let (fixture, fault, ttl) = (fixture.clone(), sc.fault, sc.ttl);
        std::thread::spawn(move || scenario::inject(fault, &fixture, ttl, deadline))
    };
    let manager = manager(&urls, ReplicaAck::default());
    runtime.block_on(run_workers(sc, manager, resource.clone(), deadline));
    let _ = faults.join();
    resource.figures()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn manager(urls: &[String], replica_ack: ReplicaAck) -> LockManager {
    LockManager::builder(urls)
        .timeout(Duration::from_millis(50))
        .replica_ack(replica_ack)
        .build()
        .expect("lock manager")
}

async fn run_workers(
    sc: &Scenario,
    manager: LockManager,
    resource: Arc<Resource>,
    deadline: Instant,
) {
    let plan = Plan {
        ttl: sc.ttl,
        hold: sc.hold,
        writes: sc.writes,
        pauses: sc.fault == Fault::PauseWorker,
        deadline,
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| tokio::spawn(worker(id, manager.clone(), resource.clone(), plan)))
        .collect();
    for w in workers {
        let _ = w.await;
    }
}

#[derive(Clone, Copy)]
struct Plan {
    ttl: Duration,
    hold: Duration,
    writes: u32,
    /// Worker 0 freezes past its TTL in every other section (scenario 5).
    pauses: bool,
    deadline: Instant,
}

/// Takes the lock over and over until the deadline; each section writes `writes` times.
async fn worker(id: usize, manager: LockManager, resource: Arc<Resource>, plan: Plan) {
    let Ok(mut conn) = resource.connect().await else {
        eprintln!("chaos: worker {id} cannot reach the resource");
        return;
    };
    let mut sections = 0u32;
    while Instant::now() < plan.deadline {
        let Ok(guard) = manager
            .lock("chaos", plan.ttl, Duration::from_secs(1))
            .await
        else {
            continue;
        };
        sections += 1;
        let (token, granted_at, start) = (guard.token(), Instant::now(), resource.now());
        for write in 0..plan.writes {
            // A refusal is the gate doing its job.
            resource.write(&mut conn, token).await;
            if plan.pauses && id == 0 && sections.is_multiple_of(2) && write == 0 {
                // The GC-pause timeline: frozen past the TTL, then resumes its writes.
                tokio::time::sleep(plan.ttl + Duration::from_millis(300)).await;
            } else if write + 1 < plan.writes {
                tokio::time::sleep(plan.hold / plan.writes).await;
            }
        }
        let end = resource.now();
        resource.record(Section {
            token,
            granted_at,
            start,
            end,
        });
        let _ = guard.release().await;
    }
}

fn report(results: &[(Scenario, Figures, Result<&'static str, String>)]) -> std::process::ExitCode {
    println!("| # | scenario | assumption broken | grants | overlaps | refused by the gate | stale writes through the gate | stale writes without it | order violations | max holders | result |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut total = Figures::default();
    for (sc, f, verdict) in results {
        println!("{}", row(sc, f, shown(verdict)));
        total.grants += f.grants;
        total.overlaps += f.overlaps;
        total.accepted_stale += f.accepted_stale;
        total.unguarded_stale += f.unguarded_stale;
        total.order_violations += f.order_violations;
    }
    for (sc, f, _) in results {
        if let Some(p) = &f.permits {
            println!(
                "scenario {}: {} grants, {}",
                sc.number,
                f.grants,
                permits_line(p)
            );
        }
    }
    println!(
        "chaos: {} scenarios, {} grants, {} overlaps, {} accepted stale writes, {} token-order violations",
        results.len(), total.grants, total.overlaps, total.accepted_stale, total.order_violations
    );
    println!(
        "chaos: without the gate, the same writes would have let {} stale writes through",
        total.unguarded_stale
    );
    let failed = results
        .iter()
        .filter(|(_, _, verdict)| verdict.is_err())
        .count();
    println!("chaos: {} passed, {failed} failed", results.len() - failed);
    if failed > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// One table row. The lock columns say `-` for the semaphore scenario (permits may be held
/// together, and no resource counts writes there), and `max holders` says `-` for the locks.
fn row(sc: &Scenario, f: &Figures, verdict: &str) -> String {
    let lock = |n: usize| match f.permits {
        Some(_) => "-".to_string(),
        None => n.to_string(),
    };
    let holders = f.permits.map_or("-".to_string(), |p| {
        format!("{} (limit {})", p.max_holders, p.limit)
    });
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {holders} | {verdict} |",
        sc.number,
        sc.name,
        sc.breaks,
        f.grants,
        lock(f.overlaps),
        lock(f.rejections),
        lock(f.accepted_stale),
        lock(f.unguarded_stale),
        lock(f.order_violations),
    )
}

fn shown<'a>(verdict: &'a Result<&'static str, String>) -> &'a str {
    match verdict {
        Ok(passed) => passed,
        Err(failed) => failed,
    }
}
