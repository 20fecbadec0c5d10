//! `make bench-server`, guarded writes: `DLOCK.GUARD gate token SET k v` next to a plain
//! `SET k v` (the goal: at most 1.3x the server CPU) and next to what a user writes without
//! dlock, a script that checks a token kept in a string and then sets. Each side on a flushed
//! keyspace with the same keys, the order rotated from round to round; pipelined (the server's
//! cost alone, the hardest case for a ratio) and one call per round trip (as a client that waits
//! for each reply).

use redis::Connection;

use crate::{call_cost_piped, cmd, flush, median, CallCost};

const ROUNDS: usize = 4;
const GOAL: f64 = 1.3;

/// The check a user writes without a gate: the token kept in a string beside the data.
const FENCED_SET: &str = "local g = tonumber(redis.call('GET', KEYS[1]) or '0') \
    local t = tonumber(ARGV[1]) \
    if t < g then return redis.error_reply('STALE') end \
    if t > g then redis.call('SET', KEYS[1], ARGV[1]) end \
    return redis.call('SET', KEYS[2], ARGV[2])";

type Make<'a> = &'a dyn Fn(usize) -> redis::Cmd;

/// One row: how the gate stands, how calls are sent.
struct Case {
    what: &'static str,
    /// The gate's key for the i-th write.
    gate: fn(usize) -> String,
    /// (calls, pipeline depth).
    calls: (usize, usize),
}

const CASES: [Case; 3] = [
    Case {
        what: "one standing gate, pipelined",
        gate: |_| "gate".into(),
        calls: (100_000, 1_000),
    },
    Case {
        what: "a new gate each write, pipelined",
        gate: |i| format!("g:{i}"),
        calls: (100_000, 1_000),
    },
    Case {
        what: "one standing gate, one call per round trip",
        gate: |_| "gate".into(),
        calls: (20_000, 1),
    },
];

pub fn print(c: &mut Connection) {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(FENCED_SET)
        .query(c)
        .expect("SCRIPT LOAD");
    println!("\nGuarded writes: `DLOCK.GUARD gate 7 SET k:<n> v` next to `SET k:<n> v` and to `EVALSHA` of a script that checks a token kept in a string, then sets. Server process CPU µs per call (user + system, parsing and replies included), median of {ROUNDS} rounds, each side on a flushed keyspace, order rotated:\n");
    println!(
        "| case | GUARD | SET | **GUARD / SET** | script | GUARD / script | goal (GUARD / SET) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for case in CASES {
        let guard = |i: usize| {
            let gate = (case.gate)(i);
            cmd(&["DLOCK.GUARD", &gate, "7", "SET", &format!("k:{i}"), "v"])
        };
        let set = |i: usize| cmd(&["SET", &format!("k:{i}"), "v"]);
        let script = |i: usize| {
            let gate = (case.gate)(i);
            cmd(&["EVALSHA", &sha, "2", &gate, &format!("k:{i}"), "7", "v"])
        };
        let sides: [(&str, Make); 3] =
            [("dlock.guard", &guard), ("set", &set), ("evalsha", &script)];
        let costs = rotated(c, case.what, &sides, case.calls);
        let [g, s, l] = costs.map(|of| median(of.iter().map(|c| c.process_us_per_call).collect()));
        let verdict = if g / s <= GOAL { "met" } else { "missed" };
        println!(
            "| {} | {g:.2} | {s:.2} | **{:.2}x** | {l:.2} | {:.2}x | <= {GOAL}x: {verdict} |",
            case.what,
            g / s,
            g / l
        );
    }
}

/// Each side's costs over the rounds, the order of the sides rotated each round.
fn rotated(
    c: &mut Connection,
    what: &str,
    sides: &[(&str, Make); 3],
    calls: (usize, usize),
) -> [Vec<CallCost>; 3] {
    let mut costs: [Vec<CallCost>; 3] = Default::default();
    for round in 0..ROUNDS {
        eprintln!(
            "bench-server: guarded writes, {what}, round {}/{ROUNDS}",
            round + 1
        );
        for k in 0..sides.len() {
            let at = (round + k) % sides.len();
            flush(c);
            let (stat, make) = sides[at];
            costs[at].push(call_cost_piped(c, stat, calls, make));
        }
    }
    costs
}
