//! The shared conformance table (conformance/*.json, format in conformance/README.md): every case
//! run against this client's pure functions. The Python and Node suites run the same files.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::acquisition::{Acquisition, Event, Step};
use crate::errors::Error;
use crate::kind::LockKind;
use crate::timing::{validity, Drift};

pub(crate) fn table(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let cases = doc["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "{name} has no cases");
    cases
}

pub(crate) fn name(case: &Value) -> String {
    case.get("name")
        .map_or_else(|| case.to_string(), |n| n.to_string())
}

pub(crate) fn token(v: &Value) -> u64 {
    v.as_str()
        .expect("tokens are strings")
        .parse()
        .expect("a u64 token")
}

fn kind(case: &Value) -> LockKind {
    match case["kind"].as_str().expect("kind") {
        "exclusive" => LockKind::Exclusive,
        "shared" => LockKind::Shared,
        "semaphore" => LockKind::Semaphore {
            limit: case["limit"].as_u64().expect("limit") as u32,
        },
        other => panic!("unknown kind {other}"),
    }
}

pub(crate) fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn quorum_sizes_by_kind() {
    for case in table("quorum.json") {
        let nodes = case["nodes"].as_u64().unwrap() as usize;
        assert_eq!(
            kind(&case).quorum(nodes) as u64,
            case["quorum"].as_u64().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn validity_and_drift() {
    for case in table("validity.json") {
        let ms = |key: &str| case[key].as_f64().unwrap();
        let drift = Drift {
            factor: ms("drift_factor"),
            constant: Duration::from_secs_f64(ms("drift_constant_ms") / 1000.0),
        };
        let started = Instant::now();
        let now = started + Duration::from_secs_f64(ms("elapsed_ms") / 1000.0);
        let ttl = Duration::from_secs_f64(ms("ttl_ms") / 1000.0);
        let got = validity(ttl, started, now, &drift).map(|d| d.as_secs_f64() * 1000.0);
        match case["validity_ms"].as_f64() {
            None => assert_eq!(got, None, "{}", name(&case)),
            Some(want) => {
                let got = got.unwrap_or_else(|| panic!("{}: no validity", name(&case)));
                assert!(
                    (got - want).abs() < 0.001,
                    "{}: {got} != {want}",
                    name(&case)
                );
            }
        }
    }
}

fn event(v: &Value) -> Event {
    let node = v["node"].as_u64().unwrap() as usize;
    let round = v["round"].as_u64().unwrap() as u32;
    match v["event"].as_str().unwrap() {
        "granted" => Event::Granted {
            node,
            round,
            token: token(&v["token"]),
        },
        "unavailable" => Event::Unavailable { node, round },
        "fenced" => Event::Fenced {
            node,
            round,
            committed: v["committed"].as_bool().unwrap(),
        },
        other => panic!("unknown event {other}"),
    }
}

fn steps(v: &Value) -> Vec<Step> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let round = || s["round"].as_u64().unwrap() as u32;
            match s["step"].as_str().unwrap() {
                "wait" => Step::Wait {
                    round: round(),
                    nodes: usizes(&s["nodes"]),
                },
                "release" => Step::Release {
                    round: round(),
                    nodes: usizes(&s["nodes"]),
                },
                "fence" => Step::Fence {
                    round: round(),
                    token: token(&s["token"]),
                    nodes: usizes(&s["nodes"]),
                },
                "held" => Step::Held {
                    token: token(&s["token"]),
                },
                "failed" => Step::Failed,
                other => panic!("unknown step {other}"),
            }
        })
        .collect()
}

#[test]
fn acquisition_machine() {
    for case in table("acquisition.json") {
        let what = name(&case);
        let nodes = case["nodes"].as_u64().unwrap() as usize;
        let needed = case["needed"].as_u64().unwrap() as usize;
        let once = case["once"].as_bool().unwrap_or(false);
        let commit = case["commit"].as_bool().unwrap_or(true);
        let (mut a, start) = if once {
            Acquisition::start_once(nodes, needed, commit)
        } else {
            Acquisition::start_needing(nodes, needed)
        };
        assert_eq!(start, steps(&case["start"]), "{what}: start");
        for (i, entry) in case["script"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                a.on(event(&entry["on"])),
                steps(&entry["steps"]),
                "{what}: event {i}"
            );
        }
        let held = case["held"].as_str().map(|t| t.parse::<u64>().unwrap());
        assert_eq!(a.held(), held, "{what}: held");
        assert_eq!(
            a.round() as u64,
            case["round"].as_u64().unwrap(),
            "{what}: round"
        );
    }
}

#[test]
fn cluster_key_slots() {
    for case in table("slots.json") {
        let key = case["key"].as_str().unwrap();
        let slot = crate::transport::slots::key_slot(key.as_bytes());
        assert_eq!(u64::from(slot), case["slot"].as_u64().unwrap(), "{key:?}");
    }
}

#[tokio::test]
async fn node_urls() {
    for case in table("urls.json") {
        let url = case["url"].as_str().unwrap();
        let made = crate::LockManager::new([url]);
        let parsed = crate::transport::urls::parse(url);
        match (case["accepted"].as_bool().unwrap(), made) {
            (true, Ok(manager)) => {
                let parsed = parsed.unwrap_or_else(|e| panic!("{url:?}: {e}"));
                assert_eq!(parsed.form(), case["form"], "{url:?}");
                assert_eq!(parsed.tls(), case["tls"], "{url:?}");
                if let Some(ports) = case.get("ports") {
                    let want: Vec<u16> = usizes(ports).into_iter().map(|p| p as u16).collect();
                    assert_eq!(parsed.ports(), want, "{url:?}");
                }
                if let Some(name) = case.get("name") {
                    assert_eq!(manager.node_urls(), [name.as_str().unwrap()], "{url:?}");
                }
            }
            (false, Err(Error::InvalidArgument(why))) => {
                assert!(parsed.is_err(), "{url:?}");
                assert!(
                    !why.contains("secret"),
                    "{url:?}: the password shown: {why}"
                );
            }
            (true, Err(e)) => panic!("{url:?} refused: {e}"),
            (false, Ok(_)) => panic!("{url:?} accepted"),
            (false, Err(e)) => panic!("{url:?} refused, but not as a bad argument: {e}"),
        }
    }
}

/// What `commits.json` calls an outcome, as this client's machine states it.
fn outcome(v: &Value) -> crate::commit::Outcome {
    use crate::commit::Outcome;
    match v {
        Value::String(s) if s == "pending" => Outcome::Pending,
        Value::String(s) if s == "lost" => Outcome::Lost,
        Value::Object(o) => Outcome::Committed(token(&o["committed"])),
        other => panic!("unknown outcome {other}"),
    }
}

#[test]
fn deferred_commits() {
    use crate::commit::{owed, Commit, Outcome};
    for case in table("commits.json") {
        let at = name(&case);
        let nodes = case["nodes"].as_u64().unwrap() as usize;
        let no_wait = case["policy"] == "no_wait";
        let is_owed = owed(no_wait, nodes, case["fencing"].as_bool().unwrap());
        assert_eq!(is_owed, case["owed"].as_bool().unwrap(), "{at}");
        let start = &case["start"];
        let valid = case.get("valid").is_none_or(|v| v.as_bool() == Some(true));
        if !is_owed || !valid {
            let expected = outcome(&start["outcome"]);
            let got = if valid {
                Outcome::Committed(token(&case["token"]))
            } else {
                Outcome::Lost
            };
            assert_eq!(got, expected, "{at}");
            assert!(start.get("fence").is_none(), "{at}");
            continue;
        }
        let needed = case["needed"].as_u64().unwrap() as usize;
        let (mut commit, asked) = Commit::start(
            nodes,
            needed,
            token(&case["token"]),
            &usizes(&case["holding"]),
        );
        assert_eq!(asked, usizes(&start["fence"]["nodes"]), "{at}");
        assert_eq!(commit.token(), token(&start["fence"]["token"]), "{at}");
        assert_eq!(commit.outcome(), outcome(&start["outcome"]), "{at}");
        for step in case["script"].as_array().unwrap() {
            let fenced = &step["fenced"];
            let node = fenced["node"].as_u64().unwrap() as usize;
            let got = commit.on_fenced(node, fenced["answer"] == "committed");
            assert_eq!(got, outcome(&step["outcome"]), "{at}: {step}");
        }
    }
}
