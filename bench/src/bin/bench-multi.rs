//! `make bench-multi`: several resources at once (docs/multi.md) against the peers, as dining
//! philosophers (docs/bench/multi.md): dlock's sets, dlock's single locks in sorted order,
//! Redisson's MultiLock (the real one, through the Java harness), node-redlock's array form and
//! redsync per key, on one node, five
//! masters and a 3+3 Redis Cluster; then the server cost of a 5-key grant and PING during
//! 16-key set churn. `BENCH_MULTI_SECS` (default 60) sets each run's length,
//! `BENCH_MULTI_ONLY` (comma-separated words) keeps the rows whose label contains one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dlock_bench::multi::{Spec, Summary};
use dlock_bench::multi_cost::{grant_cost, ping_during, ratios};
use dlock_bench::multi_external::{self, Harness};
use dlock_bench::multi_run::{self, Taker};
use dlock_client::LockManager;
use dlock_testkit::{Cluster, Server};

const SETS: &str = "dlock sets (`lock_all`)";
const SORTED: &str = "dlock single locks, sorted (`lock` each)";
const WORKERS: usize = 10;

/// Where a row runs.
struct Deployment {
    urls: Vec<String>,
    cluster: Option<Cluster>,
    _servers: Vec<Server>,
}

impl Deployment {
    fn start(label: &'static str) -> Deployment {
        let (servers, cluster) = match label {
            "1 node" => (vec![Server::start()], None),
            "5 masters" => ((0..5).map(|_| Server::start()).collect(), None),
            _ => (Vec::new(), Some(Cluster::start(3, 1))),
        };
        let urls = match &cluster {
            Some(c) => vec![format!("redis+cluster://127.0.0.1:{}", c.nodes[0].port())],
            None => servers.iter().map(Server::url).collect(),
        };
        Deployment {
            urls,
            cluster,
            _servers: servers,
        }
    }

    /// Plain node URLs (a Cluster's first master) for the harnesses and Redisson.
    fn plain_urls(&self) -> Vec<String> {
        match &self.cluster {
            Some(c) => vec![c.nodes[0].url()],
            None => self.urls.clone(),
        }
    }
}

/// One row of the table: measured, or why not.
struct Row {
    deployment: &'static str,
    k: usize,
    contender: &'static str,
    outcome: Result<Summary, String>,
}

fn main() {
    let secs: u64 = std::env::var("BENCH_MULTI_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let only = Only::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let rows = matrix(&runtime, secs, &only);
    print_rows(&rows, secs);
    if only.wants("cost") {
        server_cost();
    }
    if only.wants("ping") {
        runtime.block_on(event_loop(secs.min(10)));
    }
    println!(
        "\n{:.0} s in all. Reproduce: `BENCH_MULTI_SECS={secs} make bench-multi`",
        started.elapsed().as_secs_f64()
    );
}

/// `BENCH_MULTI_ONLY`: the words a row's label (`1 node k=2 dlock sets ...`, `cost`, `ping`)
/// must contain one of, case-insensitive; everything when unset.
struct Only(Vec<String>);

impl Only {
    fn from_env() -> Only {
        let words = std::env::var("BENCH_MULTI_ONLY").unwrap_or_default();
        let words = words.split(',').map(|w| w.trim().to_lowercase());
        Only(words.filter(|w| !w.is_empty()).collect())
    }

    fn wants(&self, label: &str) -> bool {
        let label = label.to_lowercase();
        self.0.is_empty() || self.0.iter().any(|w| label.contains(w.as_str()))
    }
}

/// Every wanted row, deployment by deployment (a deployment with no row wanted is not started).
fn matrix(runtime: &tokio::runtime::Runtime, secs: u64, only: &Only) -> Vec<Row> {
    let harnesses = multi_external::available();
    let mut rows = Vec::new();
    for label in ["1 node", "5 masters", "cluster 3+3"] {
        let wanted: Vec<(usize, &'static str)> = [2, 5]
            .into_iter()
            .flat_map(|k| contender_names().map(|c| (k, c)))
            .filter(|(k, c)| only.wants(&format!("{label} k={k} {c}")))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let deployment = Deployment::start(label);
        for (k, contender) in wanted {
            let spec = spec(k, secs);
            let run = measure(&deployment, contender, &spec, &harnesses, rows.len());
            let outcome = runtime.block_on(run);
            eprintln!(
                "bench-multi: {label}, k={k}, {contender}: {}",
                brief(&outcome)
            );
            let deployment = label;
            rows.push(Row {
                deployment,
                k,
                contender,
                outcome,
            });
        }
    }
    rows
}

/// dlock's Rust client with the 500 ms per-node timeout the other benchmarks give it (the
/// machine is loaded: the default 50 ms times out under the harnesses' load).
fn dlock(urls: &[String]) -> Result<LockManager, String> {
    LockManager::builder(urls)
        .timeout(Duration::from_millis(500))
        .build()
        .map_err(|e| e.to_string())
}

/// A figure, or `-` where there is none (no section completed).
fn fig(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.decimals$}")
    }
}

fn contender_names() -> [&'static str; 5] {
    [
        SETS,
        SORTED,
        multi_external::REDISSON,
        multi_external::NODE_REDLOCK,
        multi_external::REDSYNC,
    ]
}

fn spec(k: usize, secs: u64) -> Spec {
    Spec {
        workers: WORKERS,
        k,
        hold: Duration::from_millis(1),
        ttl: Duration::from_secs(1),
        duration: Duration::from_secs(secs),
    }
}

fn brief(outcome: &Result<Summary, String>) -> String {
    match outcome {
        Ok(s) => format!(
            "{:.0} sections/s, p99 {:.1} ms, {} deadlocked",
            s.sections_per_s, s.wait_p99_ms, s.deadlocked
        ),
        Err(why) => why.clone(),
    }
}

/// One contender's run on `d` (resources named per run, so runs never share a key).
async fn measure(
    d: &Deployment,
    contender: &str,
    spec: &Spec,
    harnesses: &[Harness],
    run: usize,
) -> Result<Summary, String> {
    let prefix = format!("m{run}");
    let names = |tag: bool| -> Vec<String> {
        (0..spec.workers)
            .map(|i| {
                if tag {
                    format!("{{{prefix}}}:r{i}")
                } else {
                    format!("{prefix}:r{i}")
                }
            })
            .collect()
    };
    let manager = || dlock(&d.urls);
    let taker = match contender {
        // On the Cluster the keys span slots: the set is taken slot group by slot group.
        SETS => Taker::Sets(manager()?, names(false)),
        SORTED => Taker::Sorted(manager()?, names(false)),
        _ => {
            let h = harnesses
                .iter()
                .find(|h| h.name == contender)
                .ok_or("not installed")?;
            if d.cluster.is_some() && !h.runs_on_cluster() {
                return Err("not run: the Go harness has no Cluster client".into());
            }
            if let (None, true, Some(why)) = (&d.cluster, d.urls.len() > 1, h.single_master()) {
                return Err(why.into());
            }
            let record = h.run(&d.plain_urls(), d.cluster.is_some(), spec, &prefix)?;
            return refused_or(record.summary(spec));
        }
    };
    refused_or(multi_run::run(*spec, Arc::new(taker)).await.summary(spec))
}

/// A run in which every attempt failed with an error (CROSSSLOT) measured nothing: its row
/// says why instead of counting the stopped workers as deadlocked.
fn refused_or(s: Summary) -> Result<Summary, String> {
    if s.sections_per_s > 0.0 || s.errors == 0 {
        return Ok(s);
    }
    let first = s.first_error.unwrap_or_default();
    Err(format!("refused, {} errors: {first}", s.errors))
}

fn print_rows(rows: &[Row], secs: u64) {
    println!("\nDining philosophers: {WORKERS} workers around {WORKERS} resources, worker i needing i..i+k-1 (mod {WORKERS}), each section held 1 ms; {secs} s per run; lease 1 s (Redisson: its watchdog's 30 s). Stalls: waits longer than the lease; deadlocked: workers that went more than 5 leases (5 s) without completing a section:\n");
    println!("| deployment | k | contender | sections/s | wait p50 ms | wait p99 ms | wait max ms | stalls | deadlocked workers | longest run-wide gap s | notes |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        match &r.outcome {
            Ok(s) => println!(
                "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {:.2} | {} |",
                r.deployment,
                r.k,
                r.contender,
                s.sections_per_s,
                fig(s.wait_p50_ms, 2),
                fig(s.wait_p99_ms, 2),
                fig(s.wait_max_ms, 0),
                s.stalls,
                s.deadlocked,
                s.run_gap_s,
                notes(s)
            ),
            Err(why) => println!(
                "| {} | {} | {} | - | - | - | - | - | - | - | {} |",
                r.deployment,
                r.k,
                r.contender,
                why.replace('|', "/")
            ),
        }
    }
}

fn notes(s: &Summary) -> String {
    let mut notes = Vec::new();
    if s.retries > 0 {
        notes.push(format!("{} rounds gave everything back", s.retries));
    }
    if s.expired > 0 {
        notes.push(format!(
            "{} sections ran past the first lock's lease",
            s.expired
        ));
    }
    if s.errors > 0 {
        let first = s
            .first_error
            .as_deref()
            .unwrap_or("")
            .replace('|', "/")
            .replace('\n', " ");
        notes.push(format!(
            "{} errors, first: {}",
            s.errors,
            first.chars().take(120).collect::<String>()
        ));
    }
    notes.join("; ")
}

/// Server µs of a 5-key grant + release against a 1-key one (INFO commandstats), one node.
fn server_cost() {
    let server = Server::start();
    let mut c = server.conn();
    let (rounds, cycles) = (6, 20_000);
    let (sets, singles) = grant_cost(&mut c, rounds, cycles);
    let med = |v: &[dlock_bench::multi_cost::Cost],
               f: fn(&dlock_bench::multi_cost::Cost) -> f64| {
        dlock_bench::median(v.iter().map(f).collect())
    };
    let (grant, cycle) = ratios(&sets, &singles);
    println!("\nServer time per call (INFO commandstats usec_per_call), one node, uncontended: {cycles} cycles per round on 1,000 key groups, pipelined 500 cycles at a time; median of {rounds} rounds, the two kinds alternating:\n");
    println!("| cycle | grant µs | release µs | cycle µs |");
    println!("|---|---|---|---|");
    println!(
        "| `DLOCK.ACQUIRE` + `DLOCK.RELEASE`, 1 key | {:.2} | {:.2} | {:.2} |",
        med(&singles, |c| c.acquire_us),
        med(&singles, |c| c.release_us),
        med(&singles, |c| c.cycle_us())
    );
    println!(
        "| `DLOCK.ACQUIREALL` + `DLOCK.RELEASEALL`, 5 keys | {:.2} | {:.2} | {:.2} |",
        med(&sets, |c| c.acquire_us),
        med(&sets, |c| c.release_us),
        med(&sets, |c| c.cycle_us())
    );
    println!("\n| goal | measured | result |");
    println!("|---|---|---|");
    for (what, r) in [
        ("5-key grant <= 5x a 1-key `DLOCK.ACQUIRE`", grant),
        (
            "5-key grant + release <= 5x a 1-key acquire + release",
            cycle,
        ),
    ] {
        println!(
            "| {what} | {r:.2}x | {} |",
            if r <= 5.0 { "met" } else { "missed" }
        );
    }
}

/// PING round trips on one node, idle and while 16 workers churn 16-key sets (every worker's
/// set is all 16 resources, in its own rotation).
async fn event_loop(secs: u64) {
    let server = Server::start();
    let spec = Spec {
        workers: 16,
        k: 16,
        hold: Duration::from_millis(1),
        ttl: Duration::from_secs(1),
        duration: Duration::from_secs(secs),
    };
    let names: Vec<String> = (0..16).map(|i| format!("churn:r{i}")).collect();
    let manager = dlock(&[server.url()]).expect("dlock manager");
    let taker = Arc::new(Taker::Sets(manager, names));
    let ([idle, busy], record) = ping_during(&server.url(), spec, taker).await;
    let s = record.summary(&spec);
    println!("\nThe event loop during set churn, one node: 16 workers each waiting for all 16 resources at once (`lock_all`, 1 ms sections), {secs} s; a 17th connection sends one PING at a time, 1 ms apart:\n");
    println!("| PING | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|");
    println!(
        "| idle node (2 s) | {:.3} | {:.3} | {:.3} |",
        idle.0, idle.1, idle.2
    );
    println!(
        "| during churn ({:.0} 16-key sections/s, {} deadlocked) | {:.3} | {:.3} | {:.3} |",
        s.sections_per_s, s.deadlocked, busy.0, busy.1, busy.2
    );
}
