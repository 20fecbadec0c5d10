//! `make bench-handoff-limit`: one lock, 32 waiters, holds of 0 ms: how many handoffs a second
//! each way of waiting reaches and how many server commands each handoff costs, on 1 node and
//! on 5, next to one PING round trip measured in the same run. Contenders rotate every round,
//! each on a fresh key.

use std::collections::BTreeMap;

use dlock_bench::handoff::{measure, ping_rtt_us, Peer, Window, WAITERS};
use dlock_bench::{median, WindowPlan};
use dlock_testkit::Server;

const ONE_NODE: [Peer; 6] = [
    Peer::DlockClient,
    Peer::DlockRaw,
    Peer::PythonRedisLock,
    Peer::Redisson,
    Peer::Rslock,
    Peer::TightPolling,
];
const FIVE_NODES: [Peer; 2] = [Peer::DlockClient, Peer::Rslock];
const PINGS: usize = 2_000;

/// One contender's windows on one node set.
struct Row {
    peer: Peer,
    /// Handoffs and grants per second, one per window.
    rates: Vec<f64>,
    grant_rates: Vec<f64>,
    handoffs: u64,
    server_cpu: f64,
    commands: BTreeMap<String, u64>,
    pings_under_load: Vec<f64>,
}

impl Row {
    fn new(peer: Peer) -> Row {
        Row {
            peer,
            rates: Vec::new(),
            grant_rates: Vec::new(),
            handoffs: 0,
            server_cpu: 0.0,
            pings_under_load: Vec::new(),
            commands: BTreeMap::new(),
        }
    }

    fn add(&mut self, w: Window) {
        self.rates.push(w.handoffs as f64 / w.seconds);
        self.grant_rates.push(w.grants as f64 / w.seconds);
        self.handoffs += w.handoffs;
        self.server_cpu += w.server_cpu;
        self.pings_under_load.push(w.ping_under_load_us);
        for (name, calls) in w.commands {
            *self.commands.entry(name).or_insert(0) += calls;
        }
    }

    fn rate(&self) -> f64 {
        median(self.rates.clone())
    }

    fn grant_rate(&self) -> f64 {
        median(self.grant_rates.clone())
    }

    /// Server CPU µs per handoff, all nodes together.
    fn cpu_per_handoff(&self) -> f64 {
        self.server_cpu * 1e6 / self.handoffs.max(1) as f64
    }

    /// The clients' commands per handoff per node, by name, and their total.
    fn per_handoff(&self, nodes: usize) -> (f64, Vec<(String, f64)>) {
        let per = |calls: u64| calls as f64 / self.handoffs.max(1) as f64 / nodes as f64;
        let by_name: Vec<(String, f64)> = self
            .commands
            .iter()
            .map(|(name, &calls)| (name.clone(), per(calls)))
            .filter(|(_, n)| *n >= 0.005)
            .collect();
        (by_name.iter().map(|(_, n)| n).sum(), by_name)
    }
}

fn main() {
    let plan = WindowPlan::from_args(3, 1);
    let single = Server::start();
    let five: Vec<Server> = (0..5).map(|_| Server::start()).collect();
    let mut one_rows: Vec<Row> = ONE_NODE.into_iter().map(Row::new).collect();
    let mut five_rows: Vec<Row> = FIVE_NODES.into_iter().map(Row::new).collect();
    let mut pings = Vec::new();
    for round in 0..plan.rounds {
        run_round(&plan, round, &[&single], &mut one_rows, &mut pings);
        let five: Vec<&Server> = five.iter().collect();
        run_round(&plan, round, &five, &mut five_rows, &mut pings);
    }
    let ping = median(pings);
    println!(
        "\nOne lock, {WAITERS} waiters, each releasing as soon as it is granted and asking again; {}s windows after a warm-up, median of {} rounds, order rotated, a fresh key each. One PING round trip on an idle node (sequential PINGs on one connection, p50 before each window, median): {ping:.1} µs.",
        plan.window.as_secs(),
        plan.rounds
    );
    print_table(&one_rows, 1, ping);
    print_table(&five_rows, 5, ping);
    print_goals(&one_rows, &five_rows, ping);
    println!("\nReproduce: `make bench-handoff-limit`");
}

/// Every contender of `rows` once on `servers`, in an order rotated by the round.
/// Before each, one PING round trip on an idle node (p50 of `PINGS`) into `pings`.
fn run_round(
    plan: &WindowPlan,
    round: usize,
    servers: &[&Server],
    rows: &mut [Row],
    pings: &mut Vec<f64>,
) {
    for k in 0..rows.len() {
        pings.push(ping_rtt_us(servers[0], PINGS));
        let at = (k + round) % rows.len();
        let peer = rows[at].peer;
        let key = format!("handoff:{round}:{at}");
        let window = measure(peer, servers, &key, plan.window);
        eprintln!(
            "bench-handoff-limit: round {}/{}, {}, {}: {:.0} handoffs/s, {:.0} grants/s",
            round + 1,
            plan.rounds,
            nodes_label(servers.len()),
            peer.name(),
            window.handoffs as f64 / window.seconds,
            window.grants as f64 / window.seconds
        );
        rows[at].add(window);
    }
}

fn print_table(rows: &[Row], nodes: usize, ping: f64) {
    let dlock = rows[0].rate();
    println!("\n{}:\n", nodes_label(nodes));
    println!("| contender | handoffs/s (to another waiter) | grants/s | µs per handoff | x one PING RTT | PING RTT meanwhile (µs) | server CPU µs per handoff (all nodes) | server commands per handoff per node | by command | dlock-client's handoffs/s, ratio |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let rate = row.rate();
        let (total, by_name) = row.per_handoff(nodes);
        let by_name: Vec<String> = by_name
            .iter()
            .map(|(name, n)| format!("`{}` {n:.2}", name.to_uppercase()))
            .collect();
        println!(
            "| {} | {rate:.0} | {:.0} | {:.1} | {:.2}x | {:.0} | {:.0} | {total:.2} | {} | **{:.2}x** |",
            row.peer.name(),
            row.grant_rate(),
            1e6 / rate,
            1e6 / rate / ping,
            median(row.pings_under_load.clone()),
            row.cpu_per_handoff(),
            by_name.join(", "),
            dlock / rate
        );
    }
}

fn print_goals(one: &[Row], five: &[Row], ping: f64) {
    let verdict = |ok: bool| if ok { "met" } else { "missed" };
    println!("\n| goal | measured | result |");
    println!("|---|---|---|");
    for row in one.iter().filter(|r| r.peer.is_dlock()) {
        let times = 1e6 / row.rate() / ping;
        println!(
            "| {}: one handoff <= 1.3x one PING round trip, 1 node | {times:.2}x | {} |",
            row.peer.name(),
            verdict(times <= 1.3)
        );
    }
    for (rows, nodes) in [(one, 1), (five, 5)] {
        let best = rows
            .iter()
            .filter(|r| !r.peer.is_dlock())
            .max_by(|a, b| a.rate().total_cmp(&b.rate()))
            .expect("a peer");
        let ratio = rows[0].rate() / best.rate();
        println!(
            "| dlock-client handoffs/s >= 2x the best peer ({}), {} | {ratio:.2}x | {} |",
            best.peer.name(),
            nodes_label(nodes),
            verdict(ratio >= 2.0)
        );
    }
    for (rows, nodes) in [(one, 1), (five, 5)] {
        for row in rows.iter().filter(|r| r.peer.is_dlock()) {
            let (total, _) = row.per_handoff(nodes);
            println!(
                "| {}: about 1 server command per node per handoff, {} | {total:.2} | {} |",
                row.peer.name(),
                nodes_label(nodes),
                verdict(total <= 1.25)
            );
        }
    }
}

fn nodes_label(nodes: usize) -> String {
    match nodes {
        1 => "1 node".into(),
        n => format!("{n} nodes"),
    }
}
