//! The attempt's decisions from the shared conformance table (conformance/README.md): whole
//! scripts of replies (attempts.json), how a reply counts (replies.json), the lease
//! (leases.json) and whether another attempt follows (retries.json). The Python and Node suites
//! run the same files.

use std::time::Duration;

use serde_json::{json, Value};

use crate::attempt::{
    another_attempt, classify, lease, Action, Attempt, AttemptError, Lease, Outcome, Policy, Reply,
};
use crate::conformance_tests::{name, table, token};
use crate::errors::NodeFailure;

fn policy(case: &Value) -> Policy {
    match case["policy"].as_str().expect("policy") {
        "queue" => Policy::Queue,
        "no_wait" => Policy::NoWait { commit: true },
        "no_wait_uncommitted" => Policy::NoWait { commit: false },
        other => panic!("unknown policy {other}"),
    }
}

fn node_name(node: usize) -> String {
    format!("node {node}")
}

/// A node's answer to an ask, as the driver hands it over.
fn answer(node: usize, v: &Value) -> Reply {
    let failure = |reason: &str| NodeFailure::new(node_name(node), reason);
    if let Some(said) = v.get("error").and_then(Value::as_str) {
        return Reply::Failed(failure(said));
    }
    match v.as_str() {
        None => Reply::Granted(token(&v["grant"])),
        Some("nil") => Reply::Nil,
        Some("failed") => Reply::Failed(failure("cannot connect")),
        Some("no_reply") => Reply::Failed(NodeFailure::no_reply(
            node_name(node),
            Duration::from_millis(50),
        )),
        Some("wrong_kind") => Reply::Failed(failure("WRONGKIND held as a semaphore")),
        Some(other) => panic!("unknown answer {other}"),
    }
}

fn fence_answer(node: usize, v: &Value) -> Result<(), NodeFailure> {
    match v.as_str().expect("a commit's answer") {
        "committed" => Ok(()),
        "refused" => Err(NodeFailure::new(
            node_name(node),
            "fence refused: lock no longer held",
        )),
        "failed" => Err(NodeFailure::new(node_name(node), "cannot connect")),
        other => panic!("unknown commit answer {other}"),
    }
}

fn error(e: &AttemptError) -> Value {
    match e {
        AttemptError::Contended => json!("contended"),
        AttemptError::ValidityExpired => json!("expired"),
        AttemptError::WrongKind(_) => json!("wrong_kind"),
        AttemptError::Invalid(_) => json!("invalid"),
        AttemptError::NoQuorum(failures) => {
            let nodes: Vec<usize> = failures
                .iter()
                .map(|f| f.node.trim_start_matches("node ").parse().expect("node i"))
                .collect();
            json!({ "no_quorum": nodes })
        }
    }
}

fn shown(actions: Vec<Action>) -> Value {
    let shown: Vec<Value> = actions
        .into_iter()
        .map(|action| match action {
            Action::Ask { round, nodes } => json!({"ask": {"round": round, "nodes": nodes}}),
            Action::AskAgain {
                node,
                round,
                after_pause,
            } => json!({"ask_again": {"node": node, "round": round, "after_pause": after_pause}}),
            Action::Fence {
                round,
                token,
                nodes,
            } => json!({"fence": {"round": round, "token": token.to_string(), "nodes": nodes}}),
            Action::Release { round, nodes } => {
                json!({"release": {"round": round, "nodes": nodes}})
            }
            Action::Held { round, token } => {
                json!({"held": {"round": round, "token": token.to_string()}})
            }
            Action::Failed(e) => json!({ "failed": error(&e) }),
        })
        .collect();
    Value::Array(shown)
}

fn at(v: &Value) -> (usize, u32) {
    let node = v["node"].as_u64().expect("node") as usize;
    (node, v["round"].as_u64().expect("round") as u32)
}

/// What the attempt does on one scripted input.
fn feed(a: &mut Attempt, input: &Value) -> Vec<Action> {
    if input == "deadline" {
        return a.on_deadline();
    }
    let flag = |v: &Value, key: &str, default: bool| v[key].as_bool().unwrap_or(default);
    if let Some(v) = input.get("reply") {
        let (node, round) = at(v);
        let past_deadline = flag(v, "past_deadline", false);
        return a.on_reply(node, round, answer(node, &v["answer"]), past_deadline);
    }
    if let Some(v) = input.get("fenced") {
        let (node, round) = at(v);
        let reply = fence_answer(node, &v["answer"]);
        return a.on_fenced(node, round, reply, flag(v, "valid", true));
    }
    if let Some(v) = input.get("pause_over") {
        let (node, round) = at(v);
        return a.on_pause_over(node, round);
    }
    if let Some(v) = input.get("late") {
        let (node, round) = at(v);
        return a.on_late(
            node,
            round,
            answer(node, &v["answer"]),
            flag(v, "released", false),
        );
    }
    panic!("unknown input {input}")
}

#[test]
fn attempt_scripts() {
    for case in table("attempts.json") {
        let what = name(&case);
        let nodes = case["nodes"].as_u64().unwrap() as usize;
        let needed = case["needed"].as_u64().unwrap() as usize;
        let (mut a, start) = Attempt::start(nodes, needed, policy(&case));
        assert_eq!(shown(start), case["start"], "{what}: start");
        for (i, entry) in case["script"].as_array().unwrap().iter().enumerate() {
            let done = shown(feed(&mut a, &entry["on"]));
            assert_eq!(done, entry["do"], "{what}: input {i} ({})", entry["on"]);
        }
    }
}

#[test]
fn how_replies_count() {
    for case in table("replies.json") {
        let past_deadline = case["past_deadline"].as_bool().unwrap();
        let counted = match classify(answer(0, &case["answer"]), policy(&case), past_deadline) {
            Outcome::Granted(_) => "granted",
            Outcome::Busy => "busy",
            Outcome::Failed(_) => "failed",
            Outcome::WrongKind(_) => "wrong_kind",
            Outcome::Invalid(_) => "invalid",
        };
        assert_eq!(counted, case["counts_as"], "{case}");
    }
}

#[test]
fn leases() {
    for case in table("leases.json") {
        let ms = |key: &str| {
            case[key]
                .as_f64()
                .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        };
        let nodes = case["nodes"].as_u64().unwrap() as usize;
        let renewed = case["renewed"].as_bool().unwrap();
        let ttl = ms("ttl_ms").expect("ttl_ms");
        let got = match lease(nodes, ms("left_ms"), ttl, renewed) {
            Lease::Held(_) => "held",
            Lease::Renew => "renew",
            Lease::Expired => "expired",
        };
        assert_eq!(got, case["lease"], "{case}");
    }
}

#[test]
fn another_attempt_or_not() {
    for case in table("retries.json") {
        let failure = match case["error"].as_str().unwrap() {
            "contended" => AttemptError::Contended,
            "no_quorum" => AttemptError::NoQuorum(Vec::new()),
            "expired" => AttemptError::ValidityExpired,
            "wrong_kind" => AttemptError::WrongKind(NodeFailure::new("", "")),
            "invalid" => AttemptError::Invalid(NodeFailure::new("", "")),
            other => panic!("unknown error {other}"),
        };
        let out_of_time = case["out_of_time"].as_bool().unwrap();
        let attempts = case["attempts"].as_u64().unwrap() as u32;
        let retry_count = case["retry_count"].as_u64().map_or(u32::MAX, |n| n as u32);
        let again = another_attempt(
            policy(&case),
            &failure,
            out_of_time,
            (attempts, retry_count),
        );
        assert_eq!(again, case["again"], "{case}");
    }
}
