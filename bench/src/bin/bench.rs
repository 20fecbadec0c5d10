//! `make bench` / `make bench-quick`: dlock next to the locks people use today, measured in the
//! same run on the same five local nodes, contenders alternating round by round. `--java`
//! (`make bench-java`): the Java harness's contenders only beside the in-process ones, 3 rounds,
//! no Cluster section, nothing written (docs/bench/java.md quotes its runs).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dlock_bench::cluster;
use dlock_bench::contenders::Contender;
use dlock_bench::contention::{contention, ContentionTable};
use dlock_bench::expiry::{holder_dies, ExpiryTable};
use dlock_bench::external::{self, External};
use dlock_bench::median;
use dlock_bench::page;
use dlock_bench::report::{
    client_goals, latency_svg, LatencyTable, RateTable, FLOOR, UNUSED, USED,
};
use dlock_bench::{Named, Plan};
use dlock_testkit::Server;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let java_only = std::env::args().any(|a| a == "--java");
    let plan = if java_only {
        Plan {
            rounds: 3,
            n: 300,
            duration: Duration::from_millis(3_000),
        }
    } else if quick {
        Plan {
            rounds: 2,
            n: 100,
            duration: Duration::from_millis(1_000),
        }
    } else {
        Plan {
            rounds: 4,
            n: 300,
            duration: Duration::from_millis(3_000),
        }
    };
    let servers: Vec<Server> = (0..5).map(|_| Server::start()).collect();
    let five: Vec<String> = servers.iter().map(Server::url).collect();
    let single = Server::start();
    let one = vec![single.url()];
    let cluster = (!java_only).then(cluster::Setup::start);
    let externals = if java_only {
        external::java()
    } else {
        external::available()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();

    let s1_five = runtime.block_on(latency(
        "1. acquire+release, 5 nodes",
        &plan,
        &five,
        &externals,
        false,
    ));
    let s1_one = runtime.block_on(latency(
        "1. acquire+release, 1 node",
        &plan,
        &one,
        &externals,
        true,
    ));
    let s2 = runtime.block_on(throughput(&plan, &five, &externals));
    let s3 = [
        runtime.block_on(contention(&plan, &one, &externals)),
        runtime.block_on(contention(&plan, &five, &externals)),
    ];
    let s4 = runtime.block_on(extension(&plan, &five, &externals));
    let deaths = plan.n / 10;
    let s5 = [
        runtime.block_on(holder_dies(&plan, &one, deaths, &externals)),
        runtime.block_on(holder_dies(&plan, &five, deaths, &externals)),
    ];
    let mut md = results_markdown(
        &plan,
        if java_only {
            "make bench-java"
        } else if quick {
            "make bench-quick"
        } else {
            "make bench"
        },
        &[&s1_five, &s1_one],
        (&s2, &s3, &s4, &s5),
        &externals,
    );
    let Some(cluster) = cluster else {
        println!("{md}");
        eprintln!(
            "bench: done in {:.0?} (--java: nothing written)",
            started.elapsed()
        );
        return;
    };
    let s6 = runtime.block_on(cluster.latency(&plan));
    md += "\n## 6. Uncontended acquire+release on Redis Cluster (3 masters, 1 replica each)\n\n";
    md += "Replica acknowledgement is `WAIT 1 100` pipelined after the grant (client/src/transport/ack.rs).\n\n";
    md += &s6.markdown(cluster::BASELINE);
    if let (Some(tls), Some(plain)) = (s6.p50(cluster::TLS), s6.p50(cluster::PLAIN)) {
        md += &format!(
            "\nMutual TLS vs plain TCP on the same master (p50): **{:.2}x** ({tls:.0} µs vs {plain:.0} µs).\n",
            tls / plain
        );
    }
    println!("{md}");
    if quick {
        eprintln!(
            "bench: done in {:.0?}; a quick run: docs/bench/clients.md left as it is",
            started.elapsed()
        );
        return;
    }
    // A full run's tables go into its page (docs/bench/clients.md, between the `bench` markers),
    // its chart beside it.
    let docs = page::docs_dir();
    page::write_between(&docs.join("clients.md"), "bench", &page::as_section(&md))
        .expect("write the results into docs/bench/clients.md");
    let chart = latency_svg(
        "Uncontended acquire+release, 5 nodes (µs, lower is better)",
        &s1_five,
    );
    std::fs::write(docs.join("latency.svg"), chart).expect("write docs/bench/latency.svg");
    eprintln!(
        "bench: done in {:.0?}; wrote docs/bench/clients.md and docs/bench/latency.svg",
        started.elapsed()
    );
}

async fn rust_contenders(nodes: &[String], single: bool) -> Named {
    let mut list: Named = if single {
        vec![
            ("dlock-client".into(), Contender::dlock(nodes, true)),
            (
                "DLOCK.ACQUIRE + DLOCK.RELEASE".into(),
                Contender::raw_dlock(&nodes[0]).await,
            ),
            (
                "SET NX PX + Lua compare-and-delete".into(),
                Contender::raw_set_lua(&nodes[0]).await,
            ),
        ]
    } else {
        vec![
            (UNUSED.into(), Contender::dlock(nodes, true)),
            (USED.into(), Contender::dlock_token_used(nodes)),
            ("dlock (fencing off)".into(), Contender::dlock(nodes, false)),
        ]
    };
    list.push((FLOOR.into(), Contender::ping_floor(nodes).await));
    list.push(("rslock".into(), Contender::rslock(nodes)));
    list
}

async fn latency(
    title: &str,
    plan: &Plan,
    nodes: &[String],
    externals: &[External],
    single: bool,
) -> LatencyTable {
    let contenders = rust_contenders(nodes, single).await;
    let externals: Vec<&External> = externals.iter().filter(|e| e.supports(nodes)).collect();
    let mut table = LatencyTable::default();
    for round in 0..plan.rounds {
        // Order alternated: every other round runs the contenders back to front.
        let mut order: Vec<usize> = (0..contenders.len() + externals.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for at in order {
            let (name, samples) = match contenders.get(at) {
                Some((name, c)) => (name.as_str(), cycles(c, name, round, plan.n).await),
                None => {
                    let ext = externals[at - contenders.len()];
                    let prefix = format!("{}:{round}", ext.name);
                    match ext.run(nodes, "latency", plan.n, 1, 0, &prefix) {
                        Ok(m) => (ext.name, m.latencies_us),
                        Err(e) => {
                            eprintln!("bench: {e}");
                            continue;
                        }
                    }
                }
            };
            progress(title, round, plan, name, &samples);
            table.add(name, samples);
        }
    }
    table
}

/// `n` uncontended cycles of one contender, each one's µs.
async fn cycles(c: &Contender, name: &str, round: usize, n: usize) -> Vec<f64> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        c.cycle(&format!("lat:{round}:{i}"))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        samples.push(t.elapsed().as_micros() as f64);
    }
    samples
}

fn progress(title: &str, round: usize, plan: &Plan, name: &str, samples: &[f64]) {
    eprintln!(
        "bench: [{title}] round {}/{} {name}: p50 {:.0} µs",
        round + 1,
        plan.rounds,
        median(samples.to_vec())
    );
}

async fn throughput(plan: &Plan, nodes: &[String], externals: &[External]) -> RateTable {
    const TASKS: usize = 64;
    let contenders: Named = vec![
        (UNUSED.into(), Contender::dlock(nodes, true)),
        (USED.into(), Contender::dlock_token_used(nodes)),
        ("dlock (fencing off)".into(), Contender::dlock(nodes, false)),
        ("rslock".into(), Contender::rslock(nodes)),
    ];
    let mut table = RateTable::default();
    for round in 0..plan.rounds {
        for (name, c) in &contenders {
            let c = Arc::new(c);
            let ops = AtomicU64::new(0);
            let deadline = Instant::now() + plan.duration;
            let t = Instant::now();
            let tasks = (0..TASKS).map(|task| {
                let (c, ops) = (c.clone(), &ops);
                async move {
                    for i in 0.. {
                        if Instant::now() >= deadline {
                            break;
                        }
                        if c.cycle(&format!("tp:{round}:{task}:{i}")).await.is_ok() {
                            ops.fetch_add(1, Relaxed);
                        }
                    }
                }
            });
            futures::future::join_all(tasks).await;
            let rate = ops.load(Relaxed) as f64 / t.elapsed().as_secs_f64();
            eprintln!(
                "bench: [2. throughput, {TASKS} tasks] round {}/{} {name}: {rate:.0}/s",
                round + 1,
                plan.rounds
            );
            table.add(name, rate);
        }
        for ext in externals.iter().filter(|e| e.supports(nodes)) {
            let prefix = format!("tp:{}:{round}", ext.name);
            match ext.run(
                nodes,
                "throughput",
                0,
                TASKS,
                plan.duration.as_millis() as u64,
                &prefix,
            ) {
                Ok(m) => {
                    let rate = m.ops / m.seconds;
                    eprintln!(
                        "bench: [2. throughput, {TASKS} tasks] round {}/{} {}: {rate:.0}/s",
                        round + 1,
                        plan.rounds,
                        ext.name
                    );
                    table.add(ext.name, rate);
                }
                Err(e) => eprintln!("bench: {e}"),
            }
        }
    }
    table
}

async fn extension(plan: &Plan, nodes: &[String], externals: &[External]) -> LatencyTable {
    let contenders: Named = vec![
        ("dlock".into(), Contender::dlock(nodes, true)),
        (FLOOR.into(), Contender::ping_floor(nodes).await),
        ("rslock".into(), Contender::rslock(nodes)),
    ];
    let mut table = LatencyTable::default();
    for round in 0..plan.rounds {
        for (name, c) in &contenders {
            let samples = match c {
                Contender::PingFloor(_) => {
                    let mut s = Vec::new();
                    for _ in 0..plan.n {
                        let t = Instant::now();
                        let _ = c.cycle("").await;
                        s.push(t.elapsed().as_micros() as f64);
                    }
                    s
                }
                _ => c
                    .extensions(&format!("ext:{round}"), plan.n)
                    .await
                    .unwrap_or_else(|e| panic!("{name}: {e}")),
            };
            progress("4. extend, 5 nodes", round, plan, name, &samples);
            table.add(name, samples);
        }
        for ext in externals
            .iter()
            .filter(|e| e.supports(nodes) && e.measures("extend"))
        {
            match ext.run(
                nodes,
                "extend",
                plan.n,
                1,
                0,
                &format!("ext:{round}:{}", ext.name),
            ) {
                Ok(m) => {
                    progress("4. extend, 5 nodes", round, plan, ext.name, &m.latencies_us);
                    table.add(ext.name, m.latencies_us);
                }
                Err(e) => eprintln!("bench: {e}"),
            }
        }
    }
    table
}

fn results_markdown(
    plan: &Plan,
    cmd: &str,
    latency_tables: &[&LatencyTable; 2],
    (s2, s3, s4, s5): (
        &RateTable,
        &[ContentionTable; 2],
        &LatencyTable,
        &[ExpiryTable; 2],
    ),
    externals: &[External],
) -> String {
    let mut md = format!(
        "# dlock benchmark results\n\nReproduce: `{cmd}` ({} rounds, contenders in reverse order every other round; {} ops per latency batch; {:?} per throughput/contention batch). \
         Five redis-server 7.0 masters with the module on loopback (a sixth for the 1-node tables), 2-core machine. Latencies are client-observed: p50 the median of the rounds' p50s (their range beside it), p99 pooled over rounds; the order of contenders alternates round by round.\n\n",
        plan.rounds, plan.n, plan.duration
    );
    let names: Vec<&str> = externals.iter().map(|e| e.name).collect();
    md += &format!(
        "External contenders installed: {}\n\n",
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    );
    md += "## 1. Uncontended acquire+release, 5 nodes\n\n";
    md += &latency_tables[0].markdown(FLOOR);
    md += "\n## 1. Uncontended acquire+release, 1 node\n\n";
    md += &latency_tables[1].markdown(FLOOR);
    md += "\n## 2. Throughput: 64 concurrent tasks, distinct resources, acquire+release pairs\n\n";
    md += &s2.markdown("pairs/s");
    for table in s3 {
        md += "\n";
        md += &table.markdown();
    }
    md += "\n## 4. Extension, 5 nodes\n\n";
    md += &s4.markdown(FLOOR);
    for table in s5 {
        md += "\n";
        md += &table.markdown();
    }
    md += &client_goals(latency_tables[0], s2);
    md += &s3[0].goals(2.0);
    md += &s3[1].goals(3.0);
    md += &s5[0].goal();
    md += &s5[1].goal();
    md
}
